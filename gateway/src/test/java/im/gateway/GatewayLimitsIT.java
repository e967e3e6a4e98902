package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * The gateway's limits (docs/security.md): connections per device, per user and per address;
 * failed authentications per address; every frame against the rate limit, readable or not; HTTP
 * request-parse timeout; idle WebSockets; and the audit trail of failures and admin requests.
 */
@ExtendWith(ImStackExtension.class)
class GatewayLimitsIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aDevicesNewestConnectionsReplaceItsOldestAndAUserPastItsLimitIsRefused(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        String ana2 = fx.dir.registerDevice("u-ana", "d-ana2").token();
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(
                ConfigKeys.MAX_CONNECTIONS_PER_DEVICE.name(), "2", ConfigKeys.MAX_CONNECTIONS_PER_USER.name(), "3"));
             RawSocket first = new RawSocket(gw.ws());
             RawSocket second = new RawSocket(gw.ws());
             RawSocket third = new RawSocket(gw.ws());
             RawSocket otherDevice = new RawSocket(gw.ws())) {
            assertEquals("authed", first.auth(fx.anaToken).get("t").asText());
            assertEquals("authed", second.auth(fx.anaToken).get("t").asText());
            assertEquals("authed", third.auth(fx.anaToken).get("t").asText());
            assertEquals(ConnectionLimits.REPLACED_STATUS, first.awaitClose(), "the device's oldest is replaced");
            assertFalse(second.closed.isDone());
            // u-ana now holds three (the replaced one until it closed, then two): one more device makes three
            Await.until(Duration.ofSeconds(5), () -> gw.gateway.openConnections() == 3, "the replaced socket closed");
            assertEquals("authed", otherDevice.auth(ana2).get("t").asText());
            try (RawSocket fourth = new RawSocket(gw.ws())) {
                JsonNode refused = fourth.auth(ana2);
                assertEquals("RATE_LIMITED", refused.get("code").asText(), refused.toString());
                assertEquals(ConnectionLimits.TRY_AGAIN_LATER, fourth.awaitClose());
            }
            assertEquals("synced", second.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"c-ab\",\"after\":0}").get("t").asText());
        }
    }

    @Test
    void anAddressPastItsLimitIsClosedAtOnce(TestStack stack) throws Exception {
        new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(ConfigKeys.MAX_CONNECTIONS_PER_ADDRESS.name(), "3"))) {
            List<RawSocket> held = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) held.add(new RawSocket(gw.ws()));
                try (RawSocket over = new RawSocket(gw.ws())) {
                    assertEquals(ConnectionLimits.TRY_AGAIN_LATER, over.awaitClose());
                }
                for (RawSocket s : held) assertFalse(s.closed.isDone());
            } finally {
                for (RawSocket s : held) s.close();
            }
            Await.until(Duration.ofSeconds(5), () -> gw.gateway.openConnections() == 0, "the held sockets closed");
            try (RawSocket again = new RawSocket(gw.ws())) {
                assertFalse(again.closed.isDone(), "slots are returned when sockets close");
            }
        }
    }

    @Test
    void anAddressThatKeepsFailingToAuthenticateIsThrottledAndEveryFailureIsAudited(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        Logger audit = (Logger) LoggerFactory.getLogger("im.audit");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        audit.addAppender(lines);
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(ConfigKeys.AUTH_FAILURES_PER_MINUTE.name(), "5"))) {
            String guess = "imt_" + "x".repeat(43);
            for (int i = 0; i < 5; i++) {
                try (RawSocket s = new RawSocket(gw.ws())) {
                    assertEquals("BAD_TOKEN", s.auth(guess).get("code").asText());
                    assertEquals(4001, s.awaitClose());
                }
            }
            try (RawSocket s = new RawSocket(gw.ws())) {
                JsonNode refused = s.auth(fx.anaToken);   // even a good token: the address is throttled, nothing is looked up
                assertEquals("RATE_LIMITED", refused.get("code").asText(), refused.toString());
                assertEquals(ConnectionLimits.TRY_AGAIN_LATER, s.awaitClose());
            }
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(gw.http("/api/conversations/c-ab/delivery"))
                    .header("Authorization", "Bearer " + fx.anaToken).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(429, r.statusCode(), r.body());
            HttpResponse<String> badAdmin = http.send(HttpRequest.newBuilder(gw.admin("/admin/users"))
                    .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(429, badAdmin.statusCode(), "the admin API shares the address's failures: " + badAdmin.body());

            String metrics = http.send(HttpRequest.newBuilder(gw.admin("/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(metrics.contains("im_audit_events_total{action=\"auth.socket\",gateway=\"" + gw.gateway.id() + "\",outcome=\"BAD_TOKEN\"} 5.0"),
                    metrics.lines().filter(l -> l.startsWith("im_audit")).toList().toString());
            List<String> logged = lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            assertEquals(5, logged.stream().filter(l -> l.contains("action=\"auth.socket\"") && l.contains("outcome=BAD_TOKEN")
                    && l.contains("from=127.0.0.1")).count(), logged.toString());
            assertTrue(logged.stream().anyMatch(l -> l.contains("outcome=RATE_LIMITED")), logged.toString());
            for (String l : logged) {
                assertFalse(l.contains(guess) || l.contains(fx.anaToken) || l.contains(Fixture.ADMIN_TOKEN), "no token in " + l);
            }
        } finally {
            audit.detachAppender(lines);
        }
    }

    @Test
    void adminRequestsAreAuditedAndTokenResponsesAreNotCached(TestStack stack) throws Exception {
        new Fixture(stack);
        Logger audit = (Logger) LoggerFactory.getLogger("im.audit");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        audit.addAppender(lines);
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            // (RFC 6750 allows one or more spaces after "Bearer", and Undertow folds them: not a test of ours)
            HttpResponse<String> wrong = http.send(HttpRequest.newBuilder(gw.admin("/admin/users"))
                    .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN + "x").build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(401, wrong.statusCode(), wrong.body());
            HttpResponse<String> created = http.send(HttpRequest.newBuilder(gw.admin("/admin/devices"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"user\":\"u-ana\",\"device\":\"d-new\"}"))
                    .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, created.statusCode(), created.body());
            assertEquals("no-store", created.headers().firstValue("Cache-Control").orElse(""), "a token response is not cached");
            String token = JSON.readTree(created.body()).get("token").asText();
            List<String> logged = lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            assertTrue(logged.stream().anyMatch(l -> l.contains("action=\"admin GET /admin/users\"") && l.contains("outcome=401")), logged.toString());
            assertTrue(logged.stream().anyMatch(l -> l.contains("action=\"admin POST /admin/devices\"") && l.contains("who=admin-token-1")
                    && l.contains("outcome=201")), logged.toString());
            for (String l : logged) assertFalse(l.contains(token) || l.contains(Fixture.ADMIN_TOKEN), "no token in " + l);
        } finally {
            audit.detachAppender(lines);
        }
    }

    @Test
    void readinessProbesAskTheDatabaseAtMostOnceASecond(TestStack stack) throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            long start = System.nanoTime();
            for (int i = 0; i < 50; i++) {
                assertEquals(200, http.send(HttpRequest.newBuilder(gw.admin("/readyz")).build(), HttpResponse.BodyHandlers.ofString()).statusCode());
            }
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            long checks = gw.gateway.readinessChecks.get();
            assertTrue(checks <= seconds + 2, checks + " database checks for 50 probes in " + seconds + " s");
        }
    }

    @Test
    void everyFrameCountsAgainstTheRateLimitReadableOrNot(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(ConfigKeys.RATE_LIMIT.name(), "50"));
             WireSocket s = new WireSocket(gw.port())) {
            s.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + fx.anaToken + "\"}");
            assertEquals("authed", JSON.readTree(s.read().text()).get("t").asText());
            int n = 1_000;
            for (int i = 0; i < n; i++) s.sendText("{not json");
            int limited = 0;
            for (int i = 0; i < n; i++) {
                JsonNode f = JSON.readTree(s.read().text());
                if ("RATE_LIMITED".equals(f.path("code").asText())) limited++;
                else assertEquals("BAD_JSON", f.path("code").asText(), f.toString());
            }
            // a burst of 100 (2 x the rate) plus what refills while they arrive; the rest are refused
            assertTrue(limited >= n / 2, limited + " of " + n + " unparseable frames were refused RATE_LIMITED");
        }
    }

    @Test
    void aHalfSentRequestHeaderAndASilentWebSocketAreClosed(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(
                ConfigKeys.HTTP_PARSE_TIMEOUT_MS.name(), "500", ConfigKeys.WS_IDLE_MS.name(), "5000"))) {
            try (Socket raw = new Socket("127.0.0.1", gw.port())) {
                raw.setSoTimeout(10_000);
                OutputStream out = raw.getOutputStream();
                out.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                long start = System.nanoTime();
                InputStream in = raw.getInputStream();
                while (in.read() >= 0) {
                    // whatever the server says before it closes (a 408, or nothing)
                }
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(ms < 5_000, "a half-sent header was closed after " + ms + " ms");
            }
            // A client that answers pings (the JDK's) stays; one that does not (WireSocket) is closed as idle.
            try (RawSocket alive = new RawSocket(gw.ws()); WireSocket silent = new WireSocket(gw.port())) {
                assertEquals("authed", alive.auth(fx.anaToken).get("t").asText());
                silent.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + fx.boToken + "\"}");
                assertEquals("authed", JSON.readTree(silent.read().text()).get("t").asText());
                long start = System.nanoTime();
                silent.setReadTimeout(15_000);
                int status = silent.readUntilClose();
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(status == 1001 || status == -1, "closed as idle: " + status);
                assertTrue(ms >= 4_000 && ms <= 9_000, "closed " + ms + " ms after its last frame");
                assertFalse(alive.closed.isDone(), "a client that answers pings stays");
            }
        }
    }
}
