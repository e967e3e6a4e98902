package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A reinstall reaches the old install's open sockets on every gateway: they are closed with 4003
 * within 2 s (docs/protocol.md), and every read sent on them meanwhile is refused. A token
 * renewal (same install) leaves them open.
 */
@ExtendWith(ImStackExtension.class)
class ReinstallIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long BOUND_MS = 2_000;
    private final HttpClient http = HttpClient.newHttpClient();
    private Fixture fx;
    private InProcessGateway gwA;
    private InProcessGateway gwB;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        gwA = new InProcessGateway(stack);   // the admin request goes here
        gwB = new InProcessGateway(stack);   // another gateway holding the old install's sockets
    }

    @AfterEach
    void tearDown() {
        gwA.close();
        gwB.close();
    }

    private JsonNode admin(String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(gwA.admin(path))
                .POST(HttpRequest.BodyPublishers.noBody())
                .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private static RawSocket authed(InProcessGateway gw, String token) throws Exception {
        RawSocket s = new RawSocket(gw.ws());
        assertEquals("authed", s.auth(token).get("t").asText());
        return s;
    }

    private static String sync(String rid) {
        return "{\"t\":\"sync\",\"rid\":\"" + rid + "\",\"conv\":\"c-ab\",\"after\":0}";
    }

    @Test
    void theOldInstallsSocketsOnEveryGatewayAreRefusedAndClosedWith4003WithinTwoSeconds() throws Exception {
        try (RawSocket idle = authed(gwB, fx.anaToken);
             RawSocket syncing = authed(gwB, fx.anaToken);
             RawSocket subbing = authed(gwB, fx.anaToken);
             RawSocket sameGateway = authed(gwA, fx.anaToken)) {
            assertEquals("synced", syncing.request(sync("s0")).get("t").asText(), "before the reinstall it reads");
            for (InProcessGateway gw : new InProcessGateway[] {gwA, gwB}) {
                Await.until(Duration.ofSeconds(10), () -> gw.gateway.credentialChecks() >= 1, "the first (full) install check");
            }
            long fullA = gwA.gateway.credentialFullChecks();
            long fullB = gwB.gateway.credentialFullChecks();

            long start = System.nanoTime();
            String newToken = admin("/admin/devices/d-ana/reinstall").get("token").asText();

            JsonNode refused = syncing.request(sync("s1"));
            assertEquals("error", refused.get("t").asText(), "a sync after the reinstall: " + refused);
            assertEquals("STALE_INSTALL", refused.get("code").asText());
            assertEquals("STALE_INSTALL", subbing.request("{\"t\":\"sub\",\"rid\":\"u1\"}").get("code").asText());

            for (RawSocket s : new RawSocket[] {idle, syncing, subbing, sameGateway}) {
                long left = BOUND_MS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertEquals(4003, s.closed.get(Math.max(0, left), TimeUnit.MILLISECONDS), "closed with STALE_INSTALL's status");
            }
            assertEquals("STALE_INSTALL", idle.next().get("code").asText(), "the idle socket is told why before the close");
            assertEquals(fullA, gwA.gateway.credentialFullChecks(), "closed by reading the retirement, not every held device's epoch");
            assertEquals(fullB, gwB.gateway.credentialFullChecks());

            try (RawSocket fresh = authed(gwB, newToken)) {
                assertEquals("synced", fresh.request(sync("s2")).get("t").asText(), "the new install reads");
            }
        }
    }

    @Test
    void aTokenRenewalOnOneGatewayEndsTheOldTokensSocketsOnAnotherWith4001WithinTwoSeconds() throws Exception {
        try (RawSocket open = authed(gwB, fx.anaToken)) {
            Await.until(Duration.ofSeconds(10), () -> gwB.gateway.credentialChecks() >= 1, "the first (full) credential check");
            long fullB = gwB.gateway.credentialFullChecks();
            long start = System.nanoTime();
            String renewed = admin("/admin/devices/d-ana/token").get("token").asText();
            assertEquals(4001, open.closed.get(BOUND_MS, TimeUnit.MILLISECONDS), "closed with BAD_TOKEN's status");
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) <= BOUND_MS);
            JsonNode why = open.next();
            assertEquals("BAD_TOKEN", why.get("code").asText(), why.toString());
            assertEquals(fullB, gwB.gateway.credentialFullChecks(), "closed by reading the change, not every held device");
            try (RawSocket again = new RawSocket(gwB.ws())) {
                assertEquals("BAD_TOKEN", again.auth(fx.anaToken).get("code").asText(), "the previous token no longer connects");
            }
            try (RawSocket fresh = authed(gwB, renewed)) {
                assertTrue(fresh.request(sync("s2")).get("t").asText().equals("synced"), "the same install reads on");
            }
        }
    }
}
