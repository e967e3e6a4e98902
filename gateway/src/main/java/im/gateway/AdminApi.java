package im.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.store.directory.ConversationCursors;
import im.store.directory.ConversationInfo;
import im.store.directory.ConversationSummary;
import im.store.directory.DeviceCursor;
import im.store.directory.DeviceSummary;
import im.store.directory.DeviceRegistration;
import im.store.directory.Directory;
import im.store.directory.DirectoryListing;
import im.store.directory.LaggingDevice;
import im.store.directory.Membership;
import im.store.directory.MembershipChange;
import im.store.directory.Onboarding;
import im.store.directory.Page;
import im.store.directory.UserSummary;
import im.protocol.Limits;
import im.store.send.MessageChanges;
import im.store.send.SendResult;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import io.undertow.util.Methods;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The admin HTTP API (JSON), protected by {@code Authorization: Bearer <IM_ADMIN_TOKEN>}:
 * users, device registration and reinstall (returns the token), conversations and membership.
 * Every error is {@code {"error":CODE,"msg":...}} with a matching HTTP status; see docs/operations.md.
 */
final class AdminApi implements HttpHandler {
    static final int MAX_BODY = 64 * 1024;
    /** Body bytes a bulk request may carry per item (an id, a name, JSON punctuation). */
    static final int BULK_BYTES_PER_ITEM = 256;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern DEVICE_REINSTALL = Pattern.compile("/admin/devices/([^/]+)/reinstall");
    private static final Pattern DEVICE_TOKEN = Pattern.compile("/admin/devices/([^/]+)/token");
    private static final Pattern CONVERSATION = Pattern.compile("/admin/conversations/([^/]+)");
    private static final Pattern MEMBER = Pattern.compile("/admin/conversations/([^/]+)/members/([^/]+)");
    private static final Pattern MEMBERS = Pattern.compile("/admin/conversations/([^/]+)/members");
    private static final Pattern USER_DEVICES = Pattern.compile("/admin/users/([^/]+)/devices");
    private static final Pattern CURSORS = Pattern.compile("/admin/conversations/([^/]+)/cursors");
    private static final Pattern RECALL = Pattern.compile("/admin/conversations/([^/]+)/messages/([^/]+)/recall");
    /** Page size of the listings when the request gives no {@code limit}. */
    static final int DEFAULT_LIMIT = 100;

    private final Directory directory;
    private final DirectoryListing listing;
    private final MessageChanges changes;
    private final List<byte[]> adminTokens = new ArrayList<>();
    /** Items one bulk request may carry (IM_ADMIN_BULK_MAX). */
    private final int bulkMax;
    private final ConnectionLimits limits;
    private final Audit audit;

    AdminApi(Directory directory, DirectoryListing listing, MessageChanges changes, List<String> adminTokens, int bulkMax,
             ConnectionLimits limits, Audit audit) {
        this.directory = directory;
        this.changes = changes;
        this.bulkMax = bulkMax;
        this.listing = listing;
        for (String t : adminTokens) this.adminTokens.add(t.getBytes(StandardCharsets.US_ASCII));
        this.limits = limits;
        this.audit = audit;
    }

    @Override
    public void handleRequest(HttpServerExchange ex) throws Exception {
        if (ex.isInIoThread()) {
            ex.dispatch(this);
            return;
        }
        ex.getResponseHeaders().put(Headers.CACHE_CONTROL, "no-store");   // responses carry device tokens
        InetAddress from = ex.getSourceAddress().getAddress();
        int[] who = {-1};
        // The audit line is written when the response is committed, before the caller can see it.
        String action = ex.getRequestMethod() + " " + template(ex.getRequestPath());
        ex.addResponseCommitListener(done -> audit.admin(action, who[0], from, done.getStatusCode()));
        try {
            if (!limits.mayAuthenticate(from, System.nanoTime())) {
                respond(ex, 429, error("RATE_LIMITED", "too many failed authentications from this address; retry in a minute"));
                return;
            }
            who[0] = tokenIndex(ex.getRequestHeaders().getFirst(Headers.AUTHORIZATION));
            if (who[0] < 0) {
                limits.failed(from, System.nanoTime());
                ex.getResponseHeaders().put(Headers.WWW_AUTHENTICATE, "Bearer");
                respond(ex, 401, error("UNAUTHORIZED", "missing or wrong admin token"));
                return;
            }
            route(ex);
        } catch (BadRequest e) {
            respond(ex, e.status, error(e.code, e.getMessage()));
        } catch (RuntimeException e) {
            ErrorMapper.Answer a = ErrorMapper.answer(e, ErrorMapper.Door.ADMIN_HTTP, "retry",
                    "admin request " + ex.getRequestMethod() + " " + ex.getRequestPath());
            respond(ex, a.status(), error(a.name(), a.message()));
        }
    }

    /**
     * Which admin token the header carries ({@code Bearer <token>}, one space, nothing else), or
     * -1. Compared with every configured token in constant time.
     */
    private int tokenIndex(String header) {
        if (header == null || !header.startsWith("Bearer ")) return -1;
        byte[] given = header.substring("Bearer ".length()).getBytes(StandardCharsets.UTF_8);
        int found = -1;
        for (int i = 0; i < adminTokens.size(); i++) {
            if (MessageDigest.isEqual(adminTokens.get(i), given) & found < 0) found = i;
        }
        return found;
    }

    /** The request path with its ids replaced by {@code {}}: what the audit's action is named by. */
    static String template(String path) {
        String[] parts = path.split("/", -1);
        StringBuilder b = new StringBuilder();
        for (int i = 1; i < parts.length; i++) {
            b.append('/').append((i == 3 || i == 5) && !parts[i].equals("bulk") ? "{}" : parts[i]);
        }
        return b.length() > 80 ? b.substring(0, 80) : b.toString();
    }

    private void route(HttpServerExchange ex) throws IOException {
        String path = ex.getRequestPath();
        HttpString method = ex.getRequestMethod();
        Matcher m;
        if (path.equals("/admin/users") && method.equals(Methods.GET)) {
            Page<UserSummary> p = listing.listUsers(query(ex, "after"), limit(ex));
            ObjectNode o = JSON.createObjectNode();
            ArrayNode us = o.putArray("users");
            for (UserSummary u : p.items()) us.addObject().put("user", u.user()).put("name", u.name()).put("devices", u.devices());
            respond(ex, 200, next(o, p));
        } else if (path.equals("/admin/users/bulk")) {
            requireMethod(method, Methods.POST);
            List<Onboarding.NewUser> users = new ArrayList<>();
            for (JsonNode u : items(bulkBody(ex), "users")) {
                if (!u.isObject()) throw new BadRequest(400, "INVALID", "users: must be an array of {\"user\", \"name\"}");
                users.add(new Onboarding.NewUser(text(u, "user", true), text(u, "name", false)));
            }
            Onboarding.CreatedUsers r = directory.onboarding().createUsers(users);
            ObjectNode o = JSON.createObjectNode().put("created", r.created().size());
            ArrayNode existing = o.putArray("existing");
            r.existing().forEach(existing::add);
            respond(ex, 200, o);
        } else if (path.equals("/admin/devices/bulk")) {
            requireMethod(method, Methods.POST);
            List<Onboarding.NewDevice> devices = new ArrayList<>();
            for (JsonNode d : items(bulkBody(ex), "devices")) {
                if (!d.isObject()) throw new BadRequest(400, "INVALID", "devices: must be an array of {\"user\", \"device\"}");
                devices.add(new Onboarding.NewDevice(text(d, "user", true), text(d, "device", true)));
            }
            Onboarding.RegisteredDevices r = directory.onboarding().registerDevices(devices);
            ObjectNode o = JSON.createObjectNode();
            ArrayNode ds = o.putArray("devices");
            for (DeviceRegistration reg : r.registered()) ds.add(registration(reg));
            ArrayNode existing = o.putArray("existing");
            r.existing().forEach(existing::add);
            respond(ex, 200, o);
        } else if (path.equals("/admin/users")) {
            requireMethod(method, Methods.POST);
            JsonNode b = body(ex);
            String user = text(b, "user", true);
            directory.createUser(user, text(b, "name", false));
            respond(ex, 201, JSON.createObjectNode().put("user", user));
        } else if (path.equals("/admin/devices")) {
            requireMethod(method, Methods.POST);
            JsonNode b = body(ex);
            respond(ex, 201, registration(directory.registerDevice(text(b, "user", true), text(b, "device", true))));
        } else if ((m = DEVICE_REINSTALL.matcher(path)).matches()) {
            requireMethod(method, Methods.POST);
            respond(ex, 200, registration(directory.reinstallDevice(m.group(1))));
        } else if ((m = DEVICE_TOKEN.matcher(path)).matches()) {
            if (method.equals(Methods.DELETE)) {
                directory.revokeToken(m.group(1));
                ex.setStatusCode(204);
                ex.endExchange();
                return;
            }
            requireMethod(method, Methods.POST);
            respond(ex, 200, registration(directory.renewToken(m.group(1))));
        } else if (path.equals("/admin/conversations") && method.equals(Methods.GET)) {
            Page<ConversationSummary> p = listing.listConversations(query(ex, "after"), limit(ex));
            ObjectNode o = JSON.createObjectNode();
            ArrayNode cs = o.putArray("conversations");
            for (ConversationSummary c : p.items()) {
                cs.addObject().put("conv", c.conv()).put("kind", c.kind()).put("head", c.head()).put("members", c.members());
            }
            respond(ex, 200, next(o, p));
        } else if (path.equals("/admin/conversations")) {
            requireMethod(method, Methods.POST);
            JsonNode b = bulkBody(ex);
            List<String> ms = userIds(b, "members");
            String kind = text(b, "kind", false);
            ConversationInfo info = directory.createConversation(text(b, "conv", true), kind == null ? "group" : kind, ms);
            respond(ex, 201, conversation(info));
        } else if ((m = MEMBERS.matcher(path)).matches()) {
            requireMethod(method, Methods.POST);
            Onboarding.AddedMembers r = directory.onboarding().addMembers(m.group(1), userIds(bulkBody(ex), "users"));
            ObjectNode o = JSON.createObjectNode().put("conv", r.conv()).put("added", r.added().size());
            if (r.added().isEmpty()) {
                o.putNull("first").putNull("last");
            } else {
                // the seqs of the join events that added them: one bulk join (first = last), or the fewest above its cap
                long first = java.util.Collections.min(r.added().values());
                o.put("first", first).put("last", r.head());
            }
            ArrayNode already = o.putArray("already");
            r.already().forEach((user, from) -> already.addObject().put("user", user).put("from", from));
            respond(ex, 200, o.put("head", r.head()));
        } else if ((m = MEMBER.matcher(path)).matches()) {
            MembershipChange ch;
            if (method.equals(Methods.PUT)) {
                ch = directory.addMember(m.group(1), m.group(2));
            } else if (method.equals(Methods.DELETE)) {
                ch = directory.removeMember(m.group(1), m.group(2));
            } else {
                throw new BadRequest(405, "METHOD_NOT_ALLOWED", "use PUT to add a member, DELETE to remove one");
            }
            respond(ex, 200, JSON.createObjectNode().put("conv", ch.conv()).put("user", ch.user())
                    .put("event", ch.kind()).put("seq", ch.seq()).put("changed", ch.changed()));
        } else if ((m = CONVERSATION.matcher(path)).matches()) {
            requireMethod(method, Methods.GET);
            respond(ex, 200, conversation(directory.conversation(m.group(1))));
        } else if ((m = USER_DEVICES.matcher(path)).matches()) {
            requireMethod(method, Methods.GET);
            ObjectNode o = JSON.createObjectNode().put("user", m.group(1));
            ArrayNode ds = o.putArray("devices");
            for (DeviceSummary d : listing.devices(m.group(1))) {
                ObjectNode dn = ds.addObject().put("device", d.device()).put("epoch", d.epoch())
                        .put("created", d.createdMillis()).put("updated", d.updatedMillis());
                if (d.tokenExpiresMillis() == null) dn.putNull("tokenExpires");
                else dn.put("tokenExpires", d.tokenExpiresMillis());
            }
            respond(ex, 200, o);
        } else if ((m = CURSORS.matcher(path)).matches()) {
            requireMethod(method, Methods.GET);
            ConversationCursors cc = listing.cursors(m.group(1));
            ObjectNode o = JSON.createObjectNode().put("conv", cc.conv()).put("head", cc.head());
            ArrayNode ds = o.putArray("devices");
            for (DeviceCursor d : cc.devices()) cursor(ds.addObject(), d);
            respond(ex, 200, o);
        } else if ((m = RECALL.matcher(path)).matches()) {
            requireMethod(method, Methods.POST);
            long seq = positiveSeq(m.group(2));
            SendResult r = changes.recallAsAdmin(m.group(1), seq);
            respond(ex, 200, JSON.createObjectNode().put("conv", r.conv()).put("recalled", seq)
                    .put("seq", r.seq()).put("mid", r.mid()).put("dup", r.dup()));
        } else if (path.equals("/admin/lag")) {
            requireMethod(method, Methods.GET);
            int top = intParam(ex, "top", 10);
            ObjectNode o = JSON.createObjectNode();
            ArrayNode ds = o.putArray("devices");
            for (LaggingDevice d : listing.mostLagging(top)) {
                cursor(ds.addObject().put("conv", d.conv()), d.cursor()).put("behindMs", d.behindMillis());
            }
            respond(ex, 200, o);
        } else {
            throw new BadRequest(404, "NOT_FOUND", "no such admin endpoint: " + path);
        }
    }

    /** A device's cursor fields, as in {@code GET /admin/conversations/{conv}/cursors}. */
    private static ObjectNode cursor(ObjectNode n, DeviceCursor d) {
        n.put("user", d.user()).put("device", d.device()).put("member", d.member())
                .put("visibleHead", d.visibleHead()).put("delivered", d.delivered()).put("lag", d.lag());
        if (d.updatedMillis() == null) n.putNull("updated");
        else n.put("updated", d.updatedMillis());
        return n;
    }

    private static ObjectNode registration(DeviceRegistration r) {
        ObjectNode o = JSON.createObjectNode().put("user", r.user()).put("device", r.device())
                .put("epoch", r.epoch()).put("token", r.token());
        if (r.expires() == null) o.putNull("expires");
        else o.put("expires", r.expires().toString());
        return o;
    }

    private static ObjectNode conversation(ConversationInfo info) {
        ObjectNode o = JSON.createObjectNode().put("conv", info.conv()).put("kind", info.kind()).put("head", info.head());
        ArrayNode ms = o.putArray("members");
        for (Membership m : info.memberships()) {
            ObjectNode n = ms.addObject().put("user", m.user()).put("from", m.fromSeq());
            if (m.toSeq() == null) n.putNull("to");
            else n.put("to", m.toSeq());
        }
        return o;
    }

    /** A query parameter given at most once; null when absent. */
    private static String query(HttpServerExchange ex, String name) {
        Deque<String> values = ex.getQueryParameters().get(name);
        if (values == null || values.isEmpty()) return null;
        if (values.size() > 1) throw new BadRequest(400, "INVALID", name + ": given more than once");
        return values.getFirst();
    }

    private static int limit(HttpServerExchange ex) {
        return intParam(ex, "limit", DEFAULT_LIMIT);
    }

    /** An integer query parameter (its range is checked by the directory); {@code dflt} when absent. */
    private static int intParam(HttpServerExchange ex, String name, int dflt) {
        String v = query(ex, name);
        if (v == null) return dflt;
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new BadRequest(400, "INVALID", name + ": must be an integer from 1 to " + DirectoryListing.MAX_PAGE);
        }
    }

    /** A seq in a path: 1 to 2^63-1. */
    private static long positiveSeq(String v) {
        try {
            long seq = Long.parseLong(v);
            if (seq >= 1) return seq;
        } catch (NumberFormatException e) {
            // answered below
        }
        throw new BadRequest(400, "INVALID", "seq: must be an integer from 1 to " + Long.MAX_VALUE);
    }

    private static ObjectNode next(ObjectNode o, Page<?> p) {
        if (p.next() == null) o.putNull("next");
        else o.put("next", p.next());
        return o;
    }

    private static void requireMethod(HttpString actual, HttpString expected) {
        if (!actual.equals(expected)) {
            throw new BadRequest(405, "METHOD_NOT_ALLOWED", "use " + expected);
        }
    }

    private static JsonNode body(HttpServerExchange ex) throws IOException {
        return body(ex, MAX_BODY);
    }

    /** The body of a request that lists up to IM_ADMIN_BULK_MAX items. */
    private JsonNode bulkBody(HttpServerExchange ex) throws IOException {
        return body(ex, Math.max(MAX_BODY, bulkMax * BULK_BYTES_PER_ITEM));
    }

    /** The array {@code field} of a bulk body, of at most IM_ADMIN_BULK_MAX items. */
    private JsonNode items(JsonNode b, String field) {
        JsonNode n = b.get(field);
        if (n == null || !n.isArray()) throw new BadRequest(400, "INVALID", field + ": must be an array");
        if (n.size() > bulkMax) {
            throw new BadRequest(413, "TOO_LARGE", field + ": at most " + bulkMax + " in one request (IM_ADMIN_BULK_MAX); send the rest in further requests");
        }
        return n;
    }

    /** The array of user ids {@code field} of a bulk body. */
    private List<String> userIds(JsonNode b, String field) {
        List<String> ids = new ArrayList<>();
        for (JsonNode n : items(b, field)) {
            if (!n.isTextual()) throw new BadRequest(400, "INVALID", field + ": must be an array of user ids");
            ids.add(storable(field + "[]", n.textValue()));
        }
        return ids;
    }

    private static JsonNode body(HttpServerExchange ex, int maxBytes) throws IOException {
        ex.startBlocking();
        byte[] bytes;
        try (InputStream in = ex.getInputStream()) {
            bytes = in.readNBytes(maxBytes + 1);
        }
        if (bytes.length > maxBytes) throw new BadRequest(413, "TOO_LARGE", "request body over " + maxBytes + " bytes");
        try {
            JsonNode n = JSON.readTree(bytes);
            if (n == null || !n.isObject()) throw new BadRequest(400, "BAD_JSON", "body must be a JSON object");
            return n;
        } catch (JsonProcessingException e) {
            throw new BadRequest(400, "BAD_JSON", "body is not valid JSON");
        }
    }

    private static String text(JsonNode b, String field, boolean required) {
        JsonNode n = b.get(field);
        if (n == null || n.isNull()) {
            if (required) throw new BadRequest(400, "INVALID", field + ": required");
            return null;
        }
        if (!n.isTextual()) throw new BadRequest(400, "INVALID", field + ": must be a string");
        return storable(field, n.textValue());
    }

    /**
     * Every string of a request body passes here: text PostgreSQL cannot store (U+0000, a lone
     * surrogate) is a bad request, not a failed INSERT answered 500 (which a caller would retry).
     */
    private static String storable(String field, String value) {
        if (!Limits.isStorableText(value)) {
            throw new BadRequest(400, "INVALID", field + ": must be well-formed Unicode without U+0000");
        }
        return value;
    }

    private static ObjectNode error(String code, String msg) {
        return JSON.createObjectNode().put("error", code).put("msg", msg);
    }

    static void respond(HttpServerExchange ex, int status, JsonNode body) {
        ex.setStatusCode(status);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        try {
            ex.getResponseSender().send(JSON.writeValueAsString(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A request the API refuses before touching the directory. */
    private static final class BadRequest extends RuntimeException {
        final int status;
        final String code;

        BadRequest(int status, String code, String msg) {
            super(msg);
            this.status = status;
            this.code = code;
        }
    }
}
