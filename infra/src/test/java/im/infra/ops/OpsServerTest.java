package im.infra.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class OpsServerTest {
    private final HttpClient http = HttpClient.newHttpClient();
    private final AtomicBoolean ready = new AtomicBoolean();
    private PrometheusMeterRegistry registry;
    private OpsServer ops;

    @BeforeEach
    void start() {
        registry = Metrics.newRegistry();
        ops = OpsServer.start(new OpsConfig("127.0.0.1", 0), registry, ready::get);
    }

    @AfterEach
    void stop() {
        ops.close();
        registry.close();
    }

    private HttpResponse<String> call(String method, String path) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(ops.url() + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).build();
        return http.send(req, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void healthzIsOkWhileTheProcessRuns() throws Exception {
        assertTrue(ops.port() > 0);
        assertEquals(200, call("GET", "/healthz").statusCode());
    }

    @Test
    void readyzFollowsTheRolesCheck() throws Exception {
        assertEquals(503, call("GET", "/readyz").statusCode());
        ready.set(true);
        assertEquals(200, call("GET", "/readyz").statusCode());
        ready.set(false);
        assertEquals(503, call("GET", "/readyz").statusCode());
    }

    @Test
    void aReadinessCheckThatThrowsIsNotReady() throws Exception {
        try (OpsServer failing = OpsServer.start(new OpsConfig("127.0.0.1", 0), registry, () -> {
            throw new IllegalStateException("not started");
        })) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(failing.url() + "/readyz")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(503, r.statusCode());
        }
    }

    @Test
    void metricsAreThePrometheusTextOfTheRegistry() throws Exception {
        registry.counter("im.sends", "outcome", "sent").increment(3);
        HttpResponse<String> r = call("GET", "/metrics");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
        assertTrue(r.body().contains("im_sends_total{outcome=\"sent\"} 3.0"), r.body());
        assertTrue(r.body().contains("jvm_memory_used_bytes"), "JVM meters are bound");
    }

    @Test
    void otherPathsAre404AndOtherMethods405() throws Exception {
        assertEquals(404, call("GET", "/metrics/x").statusCode());
        assertEquals(404, call("GET", "/").statusCode());
        assertEquals(405, call("POST", "/healthz").statusCode());
    }
}
