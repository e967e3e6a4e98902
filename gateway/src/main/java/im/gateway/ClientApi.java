package im.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.Limits;
import im.store.directory.Directory;
import im.store.directory.DirectoryException;
import im.store.read.ConversationReader;
import im.store.read.DeliveryState;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import io.undertow.util.Methods;
import java.net.InetAddress;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * HTTP reads for clients, authenticated by a device token ({@code Authorization: Bearer <token>}):
 * {@code GET /api/conversations/{conv}/delivery}, the delivered cursor of every device of the
 * conversation's current members, which the WebSocket protocol does not offer (the web client
 * shows per-message delivery state with it). Errors are {@code {"error":CODE,"msg":...}};
 * see docs/protocol.md, "HTTP read endpoints for clients".
 */
final class ClientApi implements HttpHandler {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern DELIVERY = Pattern.compile("/api/conversations/([^/]+)/delivery");
    private static final String BEARER = "Bearer ";

    private final Directory directory;
    private final ConversationReader reader;

    private final ConnectionLimits limits;
    private final Audit audit;

    ClientApi(Directory directory, ConversationReader reader, ConnectionLimits limits, Audit audit) {
        this.directory = directory;
        this.reader = reader;
        this.limits = limits;
        this.audit = audit;
    }

    @Override
    public void handleRequest(HttpServerExchange ex) {
        if (ex.isInIoThread()) {
            ex.dispatch(this);
            return;
        }
        ex.getResponseHeaders().put(Headers.CACHE_CONTROL, "no-store");
        try {
            Matcher m = DELIVERY.matcher(ex.getRequestPath());
            if (!m.matches()) {
                fail(ex, 404, "NOT_FOUND", "no such endpoint: " + ex.getRequestPath());
                return;
            }
            if (!ex.getRequestMethod().equals(Methods.GET)) {
                ex.getResponseHeaders().put(Headers.ALLOW, "GET");
                fail(ex, 405, "METHOD_NOT_ALLOWED", "use GET");
                return;
            }
            String conv = m.group(1);
            if (!Limits.isValidId(conv)) {
                fail(ex, 400, "BAD_FIELD", "conv: must match " + Limits.ID_PATTERN);
                return;
            }
            DevicePrincipal who = authenticate(ex);
            if (who == null) return;
            AdminApi.respond(ex, 200, json(reader.delivery(who, conv)));
        } catch (RuntimeException e) {
            ErrorMapper.Answer a = ErrorMapper.answer(e, ErrorMapper.Door.CLIENT_HTTP, "retry",
                    "client request " + ex.getRequestMethod() + " " + ex.getRequestPath());
            if (a.status() == 401) ex.getResponseHeaders().put(Headers.WWW_AUTHENTICATE, "Bearer");
            fail(ex, a.status(), a.name(), a.message());
        }
    }

    /** The device of the bearer token, or null after answering 401. */
    private DevicePrincipal authenticate(HttpServerExchange ex) {
        String auth = ex.getRequestHeaders().getFirst(Headers.AUTHORIZATION);
        if (auth == null || !auth.startsWith(BEARER) || auth.length() == BEARER.length()) {
            ex.getResponseHeaders().put(Headers.WWW_AUTHENTICATE, "Bearer");
            fail(ex, 401, "BAD_TOKEN", "missing Authorization: Bearer <device token>");
            return null;
        }
        InetAddress from = ex.getSourceAddress().getAddress();
        if (!limits.mayAuthenticate(from, System.nanoTime())) {
            audit.authThrottled("http", from);
            fail(ex, 429, ErrorCode.RATE_LIMITED.wire(), "too many failed authentications from this address; retry in a minute");
            return null;
        }
        try {
            return directory.authenticate(auth.substring(BEARER.length()));
        } catch (DirectoryException e) {
            if (e.code() == DirectoryException.Code.BAD_TOKEN) limits.failed(from, System.nanoTime());   // a guess, not an old install's token
            audit.authFailed("http", from, e);
            // every refused token is a 401: an old install's as STALE_INSTALL, any other as BAD_TOKEN
            ErrorCode code = e.errorCode() == ErrorCode.STALE_INSTALL ? ErrorCode.STALE_INSTALL : ErrorCode.BAD_TOKEN;
            ex.getResponseHeaders().put(Headers.WWW_AUTHENTICATE, "Bearer");
            fail(ex, ErrorMapper.httpStatus(code), code.wire(), e.getMessage());
            return null;
        }
    }

    private static ObjectNode json(DeliveryState s) {
        ObjectNode o = JSON.createObjectNode().put("conv", s.conv()).put("head", s.head());
        ArrayNode ds = o.putArray("devices");
        for (DeliveryState.Device d : s.devices()) {
            ds.addObject().put("user", d.user()).put("device", d.device()).put("delivered", d.delivered());
        }
        return o;
    }

    private static void fail(HttpServerExchange ex, int status, String code, String msg) {
        AdminApi.respond(ex, status, JSON.createObjectNode().put("error", code).put("msg", msg));
    }
}
