package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.store.cursor.CursorService;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.store.send.SendService;
import im.protocol.ErrorCode;
import im.store.read.ConversationReader;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Sessions follow their credentials: renewing or revoking a device's token ends the sessions
 * opened with the old one (an error without rid, then close 4001) within 2 s, on a connection
 * that sends nothing; the old token authenticates no more; a revoked device comes back with a
 * renewal, its install and cursors kept.
 */
@ExtendWith(ImStackExtension.class)
class SessionEndIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long BOUND_MS = 2_000;
    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> admin(InProcessGateway gw, String method, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(gw.admin(path)).method(method, HttpRequest.BodyPublishers.noBody())
                .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void renewingATokenEndsTheSessionsOfTheOldOne(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack);
             RawSocket old = new RawSocket(gw.ws());
             RawSocket other = new RawSocket(gw.ws())) {
            assertEquals("authed", old.auth(fx.anaToken).get("t").asText());
            assertEquals("authed", other.auth(fx.boToken).get("t").asText());
            long committed = System.currentTimeMillis();
            HttpResponse<String> r = admin(gw, "POST", "/admin/devices/d-ana/token");
            assertEquals(200, r.statusCode(), r.body());
            assertSessionEnded(old, committed, "renewed or revoked");
            // another device's session is untouched
            assertEquals("synced", other.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"c-ab\",\"after\":0}").get("t").asText());
            try (RawSocket again = new RawSocket(gw.ws())) {
                assertEquals("BAD_TOKEN", again.auth(fx.anaToken).get("code").asText());
                assertEquals(4001, again.awaitClose());
            }
            try (RawSocket renewed = new RawSocket(gw.ws())) {
                assertEquals("authed", renewed.auth(JSON.readTree(r.body()).get("token").asText()).get("t").asText());
            }
        }
    }

    @Test
    void revokingATokenEndsItsSessionsUntilARenewal(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack);
             RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("authed", s.auth(fx.anaToken).get("t").asText());
            assertEquals(3, s.request("{\"t\":\"send\",\"rid\":\"s1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"hi\"}").get("seq").asLong());
            assertEquals(3, s.request("{\"t\":\"ack\",\"rid\":\"a1\",\"conv\":\"c-ab\",\"seq\":3}").get("delivered").asLong());
            long committed = System.currentTimeMillis();
            HttpResponse<String> r = admin(gw, "DELETE", "/admin/devices/d-ana/token");
            assertEquals(204, r.statusCode(), r.body());
            assertSessionEnded(s, committed, "renewed or revoked");
            try (RawSocket again = new RawSocket(gw.ws())) {
                assertEquals("BAD_TOKEN", again.auth(fx.anaToken).get("code").asText());
                assertEquals(4001, again.awaitClose());
            }
            assertEquals(404, admin(gw, "DELETE", "/admin/devices/d-none/token").statusCode());

            HttpResponse<String> renewed = admin(gw, "POST", "/admin/devices/d-ana/token");
            assertEquals(200, renewed.statusCode(), renewed.body());
            assertEquals(1, JSON.readTree(renewed.body()).get("epoch").asInt(), "the install is kept");
            try (RawSocket back = new RawSocket(gw.ws())) {
                assertEquals("authed", back.auth(JSON.readTree(renewed.body()).get("token").asText()).get("t").asText());
                assertEquals(3, back.request("{\"t\":\"ack\",\"rid\":\"a2\",\"conv\":\"c-ab\",\"seq\":1}").get("delivered").asLong(),
                        "its cursor is kept");
            }
        }
    }

    /**
     * Between a renewal's or a revocation's commit and the gateways' next credential pass, a
     * request of a session opened with the old token is refused too: each request compares the
     * session's credential with the device's row in its own transaction. Checked on the services
     * the gateway runs requests through, so that no pass of the watch can answer in their place.
     */
    @Test
    void requestsOfASupersededCredentialAreRefusedFromTheCommitOn(TestStack stack) {
        Fixture fx = new Fixture(stack);
        DevicePrincipal ana = fx.dir.authenticate(fx.anaToken);
        ConversationReader reader = new ConversationReader(fx.db);
        CursorService cursors = new CursorService(fx.db);
        try (SendService sends = new SendService(fx.db, Faults.none(), Clock.systemUTC())) {
            assertEquals(3, sends.send(ana, "c-ab", "m1", "before").seq(), "the session works before the renewal");
            assertEquals(3, cursors.ack(ana, "c-ab", 3));
            String renewed = fx.dir.renewToken("d-ana").token();
            assertBadToken(() -> sends.send(ana, "c-ab", "m2", "after the renewal"), "send");
            assertBadToken(() -> reader.sync(ana, "c-ab", 0, 10), "sync");
            assertBadToken(() -> reader.conversations(ana, "", 10), "sub");
            assertBadToken(() -> reader.catchUp(ana, null, 10, Long.MAX_VALUE), "catchup");
            assertBadToken(() -> cursors.ack(ana, "c-ab", 3), "ack");

            DevicePrincipal current = fx.dir.authenticate(renewed);
            assertEquals(ana.credential() + 1, current.credential());
            assertEquals(4, sends.send(current, "c-ab", "m2", "with the new token").seq(), "the new token's session works");
            fx.dir.revokeToken("d-ana");
            assertBadToken(() -> reader.sync(current, "c-ab", 0, 10), "sync after a revocation");
        }
    }

    private static void assertBadToken(Executable request, String what) {
        RuntimeException e = assertThrows(RuntimeException.class, request, what);
        ErrorMapper.Answer a = ErrorMapper.answer(e, ErrorMapper.Door.SOCKET, "again", what);
        assertEquals(ErrorCode.BAD_TOKEN, a.code(), what + ": " + e);
        assertEquals(DevicePrincipal.CREDENTIAL_SUPERSEDED, e.getMessage(), what);
    }

    /** The connection got an error without rid saying why, then close 4001, within the bound of the commit. */
    private static void assertSessionEnded(RawSocket s, long committed, String why) throws Exception {
        JsonNode f = s.next();
        long after = System.currentTimeMillis() - committed;
        assertEquals("BAD_TOKEN", f.path("code").asText(), f.toString());
        assertFalse(f.has("rid"), f.toString());
        assertTrue(f.get("msg").asText().contains(why), f.toString());
        assertEquals(4001, s.awaitClose());
        assertTrue(after <= BOUND_MS, "the session ended " + after + " ms after the change");
    }
}
