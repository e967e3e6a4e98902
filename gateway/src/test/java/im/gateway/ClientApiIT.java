package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.identity.DevicePrincipal;
import im.store.cursor.CursorService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The device-authenticated HTTP read ({@code GET /api/conversations/{conv}/delivery}) and the web
 * client's static files, over real HTTP against a gateway on real PostgreSQL: every documented
 * error, and cursors that match the acks written.
 */
@ExtendWith(ImStackExtension.class)
class ClientApiIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The specifier of a static {@code import ... from '...'} or {@code export ... from '...'}. */
    private static final Pattern IMPORT = Pattern.compile("(?m)^(?:import|export)\\b[^;]*?\\bfrom\\s*'([^']+)'");
    private final HttpClient http = HttpClient.newHttpClient();

    private record Reply(int status, JsonNode body, HttpResponse<String> raw) {}

    private Reply get(InProcessGateway gw, String path, String authorization) throws Exception {
        return call(gw, "GET", path, authorization);
    }

    private Reply call(InProcessGateway gw, String method, String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(gw.http(path)).method(method, HttpRequest.BodyPublishers.noBody());
        if (authorization != null) b.header("Authorization", authorization);
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        boolean json = r.headers().firstValue("Content-Type").orElse("").startsWith("application/json");
        return new Reply(r.statusCode(), json ? JSON.readTree(r.body()) : null, r);
    }

    private static void assertError(Reply r, int status, String code) {
        assertEquals(status, r.status(), "status of " + r.body());
        assertEquals(code, r.body().path("error").asText(), "error code of " + r.body());
        assertTrue(r.body().path("msg").isTextual(), "a message for humans: " + r.body());
    }

    @Test
    void deliveryStateListsEveryDeviceOfTheCurrentMembersWithItsCursor(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.registerDevice("u-bo", "d-bo-tablet");
        CursorService cursors = new CursorService(stack.dataSource());
        cursors.ack(new DevicePrincipal("u-bo", "d-bo", 1), "c-ab", 2);
        cursors.ack(new DevicePrincipal("u-ana", "d-ana", 1), "c-ab", 1);
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            Reply r = get(gw, "/api/conversations/c-ab/delivery", "Bearer " + fx.anaToken);
            assertEquals(200, r.status(), r.raw().body());
            assertEquals("c-ab", r.body().get("conv").asText());
            assertEquals(2, r.body().get("head").asLong());
            assertEquals(JSON.readTree("[{\"user\":\"u-ana\",\"device\":\"d-ana\",\"delivered\":1},"
                    + "{\"user\":\"u-bo\",\"device\":\"d-bo\",\"delivered\":2},"
                    + "{\"user\":\"u-bo\",\"device\":\"d-bo-tablet\",\"delivered\":0}]"), r.body().get("devices"));
            assertEquals("no-store", r.raw().headers().firstValue("Cache-Control").orElse(""));

            // A member who left is no longer listed, and can no longer read it.
            fx.dir.removeMember("c-ab", "u-bo");
            Reply after = get(gw, "/api/conversations/c-ab/delivery", "Bearer " + fx.anaToken);
            assertEquals(List.of("d-ana"), after.body().get("devices").findValuesAsText("device"));
            assertEquals(3, after.body().get("head").asLong());
            assertError(get(gw, "/api/conversations/c-ab/delivery", "Bearer " + fx.boToken), 403, "NOT_MEMBER");
        }
    }

    @Test
    void badRequestsGetTheDocumentedErrors(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            String path = "/api/conversations/c-ab/delivery";
            Reply missing = get(gw, path, null);
            assertError(missing, 401, "BAD_TOKEN");
            assertEquals("Bearer", missing.raw().headers().firstValue("WWW-Authenticate").orElse(""));
            assertError(get(gw, path, "Basic dTpw"), 401, "BAD_TOKEN");
            assertError(get(gw, path, "Bearer "), 401, "BAD_TOKEN");
            assertError(get(gw, path, "Bearer imt_unknown"), 401, "BAD_TOKEN");
            assertError(get(gw, path, "Bearer " + fx.cyToken), 403, "NOT_MEMBER");
            assertError(get(gw, "/api/conversations/c-none/delivery", "Bearer " + fx.anaToken), 403, "NOT_MEMBER");
            assertError(get(gw, "/api/conversations/c%20x/delivery", "Bearer " + fx.anaToken), 400, "BAD_FIELD");
            assertError(get(gw, "/api/conversations/c-ab", "Bearer " + fx.anaToken), 404, "NOT_FOUND");
            assertError(call(gw, "POST", path, "Bearer " + fx.anaToken), 405, "METHOD_NOT_ALLOWED");

            String old = fx.boToken;
            fx.dir.reinstallDevice("d-bo");
            assertError(get(gw, path, "Bearer " + old), 401, "STALE_INSTALL");
        }
    }

    @Test
    void theWebClientIsServedAtTheRootWithAStrictContentPolicy(TestStack stack) throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            for (String page : List.of("/", "/app/", "/app/index.html")) {
                Reply r = get(gw, page, null);
                assertEquals(200, r.status(), page);
                assertTrue(r.raw().headers().firstValue("Content-Type").orElse("").startsWith("text/html"), page);
                assertTrue(r.raw().body().contains("<script type=\"module\" src=\"/app/app.js\""), page);
                assertTrue(r.raw().headers().firstValue("Content-Security-Policy").orElse("").contains("script-src 'self'"), page);
            }
            Reply js = get(gw, "/app/app.js", null);
            assertEquals(200, js.status());
            assertTrue(js.raw().body().contains("/api/conversations/"), "the script reads the delivery endpoint");
            // Module scripts run only when served with a JavaScript MIME type (and nosniff forbids guessing);
            // every module the page imports, the SDK copy's included, is served.
            List<String> modules = new ArrayList<>(List.of("/app/app.js"));
            for (int i = 0; i < modules.size(); i++) {
                Reply m = get(gw, modules.get(i), null);
                assertEquals(200, m.status(), modules.get(i));
                assertEquals("text/javascript", m.raw().headers().firstValue("Content-Type").orElse(""), modules.get(i));
                Matcher imports = IMPORT.matcher(m.raw().body());
                while (imports.find()) {
                    String next = URI.create("http://x" + modules.get(i)).resolve(imports.group(1)).getPath();
                    if (!modules.contains(next)) modules.add(next);
                }
            }
            assertTrue(modules.contains("/app/generated-sdk/browser.js") && modules.contains("/app/generated-sdk/client.js"), modules.toString());
            assertEquals(200, get(gw, "/app/app.css", null).status());
            assertEquals(404, get(gw, "/app/nothing-here.js", null).status());
            assertEquals(404, get(gw, "/app/../../pom.xml", null).status());
        }
    }
}
