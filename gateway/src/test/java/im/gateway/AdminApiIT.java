package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(ImStackExtension.class)
class AdminApiIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private InProcessGateway gw;
    private TestStack stack;

    @BeforeEach
    void setUp(TestStack stack) {
        this.stack = stack;
        gw = new InProcessGateway(stack);
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private record Reply(int status, JsonNode body) {}

    private Reply call(String method, String path, String body, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(gw.admin(path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) b.header("Authorization", "Bearer " + token);
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), JSON.readTree(r.body()));
    }

    private Reply admin(String method, String path, String body) throws Exception {
        return call(method, path, body, Fixture.ADMIN_TOKEN);
    }

    @Test
    void fullAdminFlowThenTheDeviceCanSend() throws Exception {
        assertEquals(201, admin("POST", "/admin/users", "{\"user\":\"u-ana\",\"name\":\"Ana\"}").status());
        assertEquals(201, admin("POST", "/admin/users", "{\"user\":\"u-bo\"}").status());
        Reply dev = admin("POST", "/admin/devices", "{\"user\":\"u-ana\",\"device\":\"d-ana\"}");
        assertEquals(201, dev.status());
        assertEquals(1, dev.body().get("epoch").asInt());
        String token = dev.body().get("token").asText();
        Reply conv = admin("POST", "/admin/conversations", "{\"conv\":\"c-ab\",\"kind\":\"direct\",\"members\":[\"u-ana\",\"u-bo\"]}");
        assertEquals(201, conv.status(), conv.body().toString());
        assertEquals(2, conv.body().get("head").asLong());
        assertEquals(2, conv.body().get("members").size());

        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("authed", s.auth(token).get("t").asText());
            JsonNode sent = s.request("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"hi\"}");
            assertEquals(3, sent.get("seq").asLong());
        }

        Reply reinstall = admin("POST", "/admin/devices/d-ana/reinstall", null);
        assertEquals(200, reinstall.status());
        assertEquals(2, reinstall.body().get("epoch").asInt());

        assertEquals(201, admin("POST", "/admin/users", "{\"user\":\"u-cy\"}").status());
        Reply add = admin("PUT", "/admin/conversations/c-ab/members/u-cy", null);
        assertEquals(200, add.status());
        assertEquals(4, add.body().get("seq").asLong());
        assertEquals("join", add.body().get("event").asText());
        Reply remove = admin("DELETE", "/admin/conversations/c-ab/members/u-bo", null);
        assertEquals(5, remove.body().get("seq").asLong());
        JsonNode info = admin("GET", "/admin/conversations/c-ab", null).body();
        assertEquals(5, info.get("head").asLong());
        assertEquals(4, info.get("members").get(1).get("to").asLong() - 1, "bo visible until the leave at seq 5");
    }

    @Test
    void anAdminRecallsAMessageAndEveryReadReturnsTheTombstone() throws Exception {
        admin("POST", "/admin/users", "{\"user\":\"u-ana\"}");
        admin("POST", "/admin/users", "{\"user\":\"u-bo\"}");
        String token = admin("POST", "/admin/devices", "{\"user\":\"u-ana\",\"device\":\"d-ana\"}").body().get("token").asText();
        admin("POST", "/admin/conversations", "{\"conv\":\"g\",\"kind\":\"group\",\"members\":[\"u-ana\",\"u-bo\"]}");
        try (RawSocket s = new RawSocket(gw.ws())) {
            s.auth(token);
            long seq = s.request("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"g\",\"cmid\":\"m1\",\"body\":\"spam\"}").get("seq").asLong();
            Reply r = admin("POST", "/admin/conversations/g/messages/" + seq + "/recall", null);
            assertEquals(200, r.status(), r.body().toString());
            assertEquals(List.of("g", seq, seq + 1, false), List.of(r.body().get("conv").asText(), r.body().get("recalled").asLong(),
                    r.body().get("seq").asLong(), r.body().get("dup").asBoolean()));
            Reply again = admin("POST", "/admin/conversations/g/messages/" + seq + "/recall", null);
            assertEquals(List.of(200, seq + 1, true), List.of(again.status(), again.body().get("seq").asLong(), again.body().get("dup").asBoolean()));
            JsonNode synced = s.request("{\"t\":\"sync\",\"rid\":\"r2\",\"conv\":\"g\",\"after\":0,\"limit\":10}");
            JsonNode tomb = synced.get("events").get(1);
            assertEquals(List.of(seq, "", true), List.of(tomb.get("seq").asLong(), tomb.get("body").asText(), tomb.get("recalled").asBoolean()));
            assertEquals("recall", synced.get("events").get(2).get("kind").asText());

            assertEquals(List.of(404, "NOT_A_MESSAGE"), status(admin("POST", "/admin/conversations/g/messages/1/recall", null)), "the join");
            assertEquals(List.of(404, "UNKNOWN_CONV"), status(admin("POST", "/admin/conversations/nope/messages/1/recall", null)));
            assertEquals(List.of(400, "INVALID"), status(admin("POST", "/admin/conversations/g/messages/0/recall", null)));
            assertEquals(List.of(400, "INVALID"), status(admin("POST", "/admin/conversations/g/messages/x2/recall", null)));
            assertEquals(List.of(405, "METHOD_NOT_ALLOWED"), status(admin("GET", "/admin/conversations/g/messages/2/recall", null)));
        }
    }

    private static List<Object> status(Reply r) {
        return List.of(r.status(), r.body().get("error").asText());
    }

    @Test
    void withoutTheAdminTokenEverythingIs401AndNothingIsWritten() throws Exception {
        for (String token : new String[] {null, "wrong-token-wrong-token", Fixture.ADMIN_TOKEN + "x"}) {
            Reply r = call("POST", "/admin/users", "{\"user\":\"u-mallory\"}", token);
            assertEquals(401, r.status());
            assertEquals("UNAUTHORIZED", r.body().get("error").asText());
        }
        assertEquals(0, new Fixture0(stack).users());
    }

    @Test
    void badRequestsGetClearErrors() throws Exception {
        assertEquals("BAD_JSON", admin("POST", "/admin/users", "{nope").body().get("error").asText());
        assertEquals("BAD_JSON", admin("POST", "/admin/users", "[]").body().get("error").asText());
        assertEquals("INVALID", admin("POST", "/admin/users", "{}").body().get("error").asText());
        assertEquals("INVALID", admin("POST", "/admin/users", "{\"user\":42}").body().get("error").asText());
        assertEquals("INVALID", admin("POST", "/admin/users", "{\"user\":\"has space\"}").body().get("error").asText());
        assertEquals(413, admin("POST", "/admin/users", "{\"user\":\"" + "x".repeat(70_000) + "\"}").status());
        assertEquals(201, admin("POST", "/admin/users", "{\"user\":\"u1\"}").status());
        assertEquals(409, admin("POST", "/admin/users", "{\"user\":\"u1\"}").status());
        assertEquals(404, admin("POST", "/admin/devices", "{\"user\":\"u-none\",\"device\":\"d1\"}").status());
        assertEquals(404, admin("GET", "/admin/conversations/none", null).status());
        assertEquals(404, admin("GET", "/admin/nothing-here", null).status());
        assertEquals(405, admin("DELETE", "/admin/users", null).status());
        assertEquals(400, admin("POST", "/admin/conversations", "{\"conv\":\"c\",\"members\":\"u1\"}").status());
        assertEquals(404, admin("DELETE", "/admin/conversations/none/members/u1", null).status());
    }

    @Test
    void textPostgresCannotStoreIsRefusedAs400NotInternal() throws Exception {
        // A NUL or a lone surrogate in any string field used to reach the INSERT and come back 500 INTERNAL.
        for (String name : new String[] {"a\\u0000b", "a\\ud800b"}) {
            Reply r = admin("POST", "/admin/users", "{\"user\":\"u-text\",\"name\":\"" + name + "\"}");
            assertEquals(400, r.status(), r.body().toString());
            assertEquals("INVALID", r.body().get("error").asText());
            assertTrue(r.body().get("msg").asText().startsWith("name: "), r.body().toString());
        }
        Reply m = admin("POST", "/admin/conversations", "{\"conv\":\"c-x\",\"members\":[\"u\\u0000\"]}");
        assertEquals(400, m.status(), m.body().toString());
        assertEquals("INVALID", m.body().get("error").asText());
        assertEquals(0, new Fixture0(stack).users(), "nothing was written");
        assertEquals(201, admin("POST", "/admin/users", "{\"user\":\"u-text\",\"name\":\"Ana \\ud83d\\udc4b\"}").status());
    }

    @Test
    void healthAndReadiness() throws Exception {
        assertEquals(200, call("GET", "/healthz", null, null).status());
        Reply ready = call("GET", "/readyz", null, null);
        assertEquals(200, ready.status());
        assertTrue(ready.body().get("status").asText().contains("ready"));
    }

    @Test
    void bulkOnboardingOfThousandsInAFewRequests() throws Exception {
        StringBuilder users = new StringBuilder("{\"users\":[");
        StringBuilder devices = new StringBuilder("{\"devices\":[");
        StringBuilder members = new StringBuilder();
        for (int i = 0; i < 3_000; i++) {
            String sep = i == 0 ? "" : ",";
            users.append(sep).append("{\"user\":\"u-").append(i).append("\",\"name\":\"User ").append(i).append("\"}");
            devices.append(sep).append("{\"user\":\"u-").append(i).append("\",\"device\":\"d-").append(i).append("\"}");
            if (i < 2_000) members.append(sep).append("\"u-").append(i).append('"');
        }
        Reply u = admin("POST", "/admin/users/bulk", users + "]}");
        assertEquals(200, u.status(), u.body().toString());
        assertEquals(3_000, u.body().get("created").asInt());
        Reply d = admin("POST", "/admin/devices/bulk", devices + "]}");
        assertEquals(200, d.status());
        assertEquals(3_000, d.body().get("devices").size());
        String token = d.body().get("devices").get(2_500).get("token").asText();

        Reply c = admin("POST", "/admin/conversations", "{\"conv\":\"g-all\",\"kind\":\"group\",\"members\":[" + members + "]}");
        assertEquals(201, c.status(), "2,000 members in one create: " + c.body().toString().substring(0, 200));
        assertEquals(1, c.body().get("head").asLong(), "one join event for the 2,000");
        StringBuilder rest = new StringBuilder("{\"users\":[\"u-0\"");
        for (int i = 2_000; i < 3_000; i++) rest.append(",\"u-").append(i).append('"');
        Reply add = admin("POST", "/admin/conversations/g-all/members", rest + "]}");
        assertEquals(200, add.status(), add.body().toString());
        assertEquals(1_000, add.body().get("added").asInt());
        assertEquals(2, add.body().get("first").asLong(), "the 1,000 new members share one join event");
        assertEquals(2, add.body().get("last").asLong());
        assertEquals("[{\"user\":\"u-0\",\"from\":1}]", add.body().get("already").toString());
        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("authed", s.auth(token).get("t").asText(), "a token of the bulk registration");
            JsonNode synced = s.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"g-all\",\"after\":0,\"limit\":10}");
            JsonNode join = synced.get("events").get(0);
            assertEquals(2, join.get("seq").asLong(), "u-2500 sees the log from its own join: " + synced);
            assertEquals(1_000, join.get("count").asInt(), "one compact event for the 1,000 it added: " + join);
            assertEquals("u-2000", join.get("sender").asText());
            assertFalse(join.has("users"), "never the roster: " + join);
        }

        Reply missing = admin("POST", "/admin/conversations/g-all/members", "{\"users\":[\"u-nobody\",\"u-1\"]}");
        assertEquals(404, missing.status());
        assertEquals("no user u-nobody", missing.body().get("msg").asText());
        Reply dup = admin("POST", "/admin/users/bulk", "{\"users\":[{\"user\":\"u-x\"},{\"user\":\"u-x\"}]}");
        assertEquals(400, dup.status());
        assertEquals(2, admin("GET", "/admin/conversations/g-all", null).body().get("head").asLong(), "refused calls wrote nothing");
        assertEquals(400, admin("POST", "/admin/devices/bulk", "{\"devices\":{}}").status());
        assertEquals(405, admin("GET", "/admin/users/bulk", null).status());
    }

    @Test
    void bulkRequestsAreBounded(TestStack stack) throws Exception {
        try (InProcessGateway small = new InProcessGateway(stack, "", Map.of(ConfigKeys.ADMIN_BULK_MAX.name(), "3"))) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(small.admin("/admin/users/bulk"))
                    .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"users\":[{\"user\":\"a\"},{\"user\":\"b\"},{\"user\":\"c\"},{\"user\":\"d\"}]}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(413, r.statusCode(), r.body());
            assertTrue(r.body().contains("at most 3 in one request (IM_ADMIN_BULK_MAX)"), r.body());
            HttpResponse<String> huge = http.send(HttpRequest.newBuilder(small.admin("/admin/users/bulk"))
                    .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"users\":[],\"pad\":\"" + "x".repeat(70_000) + "\"}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(413, huge.statusCode(), "the body is bounded too");
        }
    }

    @Test
    void adminAndOpsPathsAreNotOnThePublicListener() throws Exception {
        for (String path : List.of("/admin/users", "/admin/conversations/c-ab", "/metrics", "/readyz", "/healthz")) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(gw.http(path)).header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(404, r.statusCode(), path + " on the public port: " + r.body());
        }
        assertEquals(200, call("GET", "/admin/users", null, Fixture.ADMIN_TOKEN).status(), "on the admin listener");
        assertEquals("127.0.0.1", GatewayConfig.from(Settings.of(Map.of(ConfigKeys.ADMIN_TOKEN.name(), Fixture.ADMIN_TOKEN))).adminHost(),
                "the admin listener is bound to loopback unless told otherwise");
    }

    /** Counts rows without the full fixture (which would create users). */
    private static final class Fixture0 {
        private final TestStack stack;

        Fixture0(TestStack stack) {
            this.stack = stack;
        }

        long users() throws Exception {
            try (var c = stack.dataSource().getConnection(); var st = c.createStatement();
                 var rs = st.executeQuery("SELECT count(*) FROM users")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
