package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.ops.Metrics;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code GET /metrics} on the gateway's port counts sends by outcome and times the sent reply. */
@ExtendWith(ImStackExtension.class)
class MetricsIT {
    private final HttpClient http = HttpClient.newHttpClient();
    private Fixture fx;
    private InProcessGateway gw;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        gw = new InProcessGateway(stack);
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private static String send(String cmid) {
        return "{\"t\":\"send\",\"rid\":\"" + cmid + "\",\"conv\":\"c-ab\",\"cmid\":\"" + cmid + "\",\"body\":\"hi\"}";
    }

    private String scrape() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(gw.admin("/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertEquals(Metrics.CONTENT_TYPE, r.headers().firstValue("Content-Type").orElse(""));
        return r.body();
    }

    /** The value of the first sample of {@code name} whose labels contain {@code label} (e.g. outcome="sent"); -1 if none. */
    private static double sample(String text, String name, String label) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{([^}]*)\\} (\\S+)$").matcher(text);
        while (m.find()) {
            if (m.group(1).contains(label)) return Double.parseDouble(m.group(2));
        }
        return -1;
    }

    private double sampleNow(String name, String label) {
        try {
            return sample(scrape(), name, label);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void sendsAreCountedByOutcomeAndTheSentLatencyIsAHistogram() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws()); RawSocket cy = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            cy.auth(fx.cyToken);
            assertEquals("sent", ana.request(send("m1")).get("t").asText());
            assertEquals("sent", ana.request(send("m2")).get("t").asText());
            assertTrue(ana.request(send("m2")).get("dup").asBoolean());
            assertEquals("NOT_MEMBER", cy.request(send("m3")).get("code").asText());

            // The latency is recorded just after the reply is handed to the socket: poll for it.
            Await.until(Duration.ofSeconds(10), () -> sampleNow("im_sent_latency_seconds_count", "gateway=") >= 3,
                    "three sent replies timed");
            String text = scrape();
            assertTrue(sample(text, "im_sends_total", "outcome=\"sent\"") >= 2, text);
            assertEquals(1.0, sample(text, "im_sends_total", "outcome=\"dup\""), text);
            assertEquals(1.0, sample(text, "im_sends_total", "outcome=\"rejected\""), text);
            assertTrue(text.contains("im_sent_latency_seconds_bucket{"), text);
            assertEquals(2.0, sample(text, "im_connections_open", "gateway="), text);
        }
    }
}
