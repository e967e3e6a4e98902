package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Expired device tokens (IM_TOKEN_TTL_S): refused at auth with BAD_TOKEN and close code 4001,
 * an open session ended at the expiry the same way, renewed through the admin API without
 * touching the install or its cursors.
 */
@ExtendWith(ImStackExtension.class)
class TokenExpiryIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    private JsonNode admin(InProcessGateway gw, String method, String path, String body, int expectStatus) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(gw.admin(path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(expectStatus, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    @Test
    void expiredTokenIsRefusedAndRenewalIssuesAWorkingOne(TestStack stack) throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(ConfigKeys.TOKEN_TTL_S.name(), "2"))) {
            admin(gw, "POST", "/admin/users", "{\"user\":\"u-ana\"}", 201);
            admin(gw, "POST", "/admin/users", "{\"user\":\"u-bo\"}", 201);
            admin(gw, "POST", "/admin/conversations", "{\"conv\":\"c-ab\",\"kind\":\"direct\",\"members\":[\"u-ana\",\"u-bo\"]}", 201);
            JsonNode dev = admin(gw, "POST", "/admin/devices", "{\"user\":\"u-ana\",\"device\":\"d-ana\"}", 201);
            String token = dev.get("token").asText();
            Instant expires = Instant.parse(dev.get("expires").asText());
            assertTrue(expires.isAfter(Instant.now()) && expires.isBefore(Instant.now().plusSeconds(3)), expires.toString());

            // Valid: authenticate, send, ack. At the expiry the session ends: an error without rid, then 4001.
            try (RawSocket open = new RawSocket(gw.ws())) {
                assertEquals("authed", open.auth(token).get("t").asText());
                assertEquals(3, open.request("{\"t\":\"send\",\"rid\":\"s1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"hi\"}")
                        .get("seq").asLong());
                assertEquals(3, open.request("{\"t\":\"ack\",\"rid\":\"a1\",\"conv\":\"c-ab\",\"seq\":3}").get("delivered").asLong());

                JsonNode cut = open.next();
                long late = System.currentTimeMillis() - expires.toEpochMilli();
                assertEquals("BAD_TOKEN", cut.get("code").asText(), cut.toString());
                assertTrue(cut.get("msg").asText().contains("expired"), cut.toString());
                assertTrue(!cut.has("rid"), cut.toString());
                assertEquals(4001, open.awaitClose());
                assertTrue(late >= 0 && late <= 2_000, "the session ended " + late + " ms after its token expired");
            }
            try (RawSocket late = new RawSocket(gw.ws())) {
                JsonNode err = late.auth(token);
                assertEquals("BAD_TOKEN", err.get("code").asText(), err.toString());
                assertTrue(err.get("msg").asText().contains("expired"), err.toString());
                assertEquals(4001, late.awaitClose());
            }

            JsonNode renewed = admin(gw, "POST", "/admin/devices/d-ana/token", null, 200);
            assertEquals(1, renewed.get("epoch").asInt(), "renewal keeps the install");
            assertNotEquals(token, renewed.get("token").asText());
            try (RawSocket s = new RawSocket(gw.ws())) {
                JsonNode authed = s.auth(renewed.get("token").asText());
                assertEquals("authed", authed.get("t").asText(), authed.toString());
                assertEquals(1, authed.get("epoch").asInt());
                // the cursor survived the renewal: acking below it is answered with the kept value
                assertEquals(3, s.request("{\"t\":\"ack\",\"rid\":\"a2\",\"conv\":\"c-ab\",\"seq\":1}").get("delivered").asLong());
            }
            try (RawSocket s = new RawSocket(gw.ws())) {
                assertEquals("BAD_TOKEN", s.auth(token).get("code").asText());
                assertEquals(4001, s.awaitClose());
            }
            JsonNode missing = admin(gw, "POST", "/admin/devices/d-none/token", null, 404);
            assertEquals("NOT_FOUND", missing.get("error").asText(), missing.toString());
            admin(gw, "GET", "/admin/devices/d-ana/token", null, 405);
        }
    }
}
