package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.protocol.ErrorCode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Hostile input at volume: mutated and random frames, deep nesting, huge values, invalid UTF-8,
 * binary frames and floods over WebSocket; random requests to the admin API. The server answers
 * every frame with a documented reply, writes nothing it should not, leaks no threads, and keeps
 * serving a well-behaved client throughout. Seeded: a failure names its seed, and
 * {@code -Dfuzz.seed=N} replays it.
 */
@ExtendWith(ImStackExtension.class)
class FuzzIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> CODES = Arrays.stream(ErrorCode.values()).map(ErrorCode::name).collect(Collectors.toSet());
    private static final Set<String> REPLIES = Set.of("error", "sent", "acked", "subbed", "synced", "authed");
    private static final List<String> SEEDS = List.of(
            "{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"hello\"}",
            "{\"t\":\"ack\",\"rid\":\"r2\",\"conv\":\"c-ab\",\"seq\":2}",
            "{\"t\":\"sub\",\"rid\":\"r3\"}",
            "{\"t\":\"sync\",\"rid\":\"r4\",\"conv\":\"c-ab\",\"after\":0,\"limit\":10}",
            "{\"t\":\"auth\",\"rid\":\"r5\",\"token\":\"imt_x\"}");

    private static final String ALPHABET = "{}[]\",:\\0123456789eE-+.tnulfase";

    private Fixture fx;
    private InProcessGateway gw;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        // the fuzz sends hundreds of requests without a valid token from one address: lift the
        // per-address failure throttle (GatewayLimitsIT tests it) so that each is answered on its own
        gw = new InProcessGateway(stack, "", Map.of("IM_RATE_LIMIT", "100000", "IM_AUTH_FAILURES_PER_MINUTE", "100000"));
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private static String mutate(String s, Random r) {
        StringBuilder b = new StringBuilder(s);
        int ops = 1 + r.nextInt(4);
        for (int i = 0; i < ops && b.length() > 0; i++) {
            int at = r.nextInt(b.length());
            switch (r.nextInt(10)) {
                case 0 -> b.deleteCharAt(at);
                case 1 -> b.insert(at, ALPHABET.charAt(r.nextInt(ALPHABET.length())));
                case 2 -> b.setCharAt(at, (char) r.nextInt(0x3000));
                case 3 -> b.insert(at, "[".repeat(1 + r.nextInt(300)));
                case 4 -> b.replace(at, Math.min(b.length(), at + 3), String.valueOf(r.nextLong()));
                case 5 -> b.insert(at, "\"" + "x".repeat(r.nextInt(100_000)) + "\"");
                case 6 -> b.insert(at, "1e" + r.nextInt(10_000));
                case 7 -> b.insert(at, "\\ud800");
                case 8 -> b.setLength(at);                                       // truncated
                default -> b.insert(at, ",\"extra\":" + r.nextInt());
            }
        }
        return b.toString();
    }

    /** The seed of a run: {@code -Dfuzz.seed=N} replays a failure, else a new one each run. */
    private static long seed() {
        return Long.getLong("fuzz.seed", System.nanoTime());
    }

    @Test
    void mutatedAndRandomFramesGetDocumentedRepliesAndWriteNothingInvalid() throws Exception {
        long seed = seed();
        Random r = new Random(seed);
        int threadsBefore = Thread.activeCount();
        Map<String, Integer> replies = new TreeMap<>();
        int freshSends = 0;
        int oversize = 0;
        RawSocket fuzz = new RawSocket(gw.ws());
        try (RawSocket good = new RawSocket(gw.ws())) {
            assertEquals("authed", fuzz.auth(fx.anaToken).get("t").asText());
            assertEquals("authed", good.auth(fx.boToken).get("t").asText());
            for (int i = 0; i < 1500; i++) {
                String frame = r.nextInt(8) == 0 ? randomText(r) : mutate(SEEDS.get(r.nextInt(SEEDS.size())), r);
                if (frame.getBytes(StandardCharsets.UTF_8).length > WebSocketEndpoint.HARD_FRAME_LIMIT) {
                    // Documented (protocol.md): a frame too large to buffer gets no reply; the socket
                    // is closed with 1009. The fuzzer then connects again, as a client would.
                    fuzz.send(frame);
                    assertEquals(1009, fuzz.awaitClose(), "seed " + seed + ", frame " + i + ": over the hard limit");
                    fuzz.close();
                    fuzz = new RawSocket(gw.ws());
                    assertEquals("authed", fuzz.auth(fx.anaToken).get("t").asText());
                    oversize++;
                    continue;
                }
                JsonNode reply;
                try {
                    reply = fuzz.request(frame);
                } catch (AssertionError noReply) {
                    throw new AssertionError("seed " + seed + " (replay: -Dfuzz.seed=" + seed + "), frame " + i + ": no reply to "
                            + abbreviate(frame), noReply);
                }
                String t = reply.path("t").asText();
                assertTrue(REPLIES.contains(t), "seed " + seed + ": undocumented reply " + reply + " to " + abbreviate(frame));
                if (t.equals("error")) {
                    String code = reply.path("code").asText();
                    assertTrue(CODES.contains(code), "seed " + seed + ": unknown code in " + reply);
                    replies.merge(code, 1, Integer::sum);
                } else {
                    replies.merge(t, 1, Integer::sum);
                    if (t.equals("sent") && !reply.get("dup").asBoolean()) freshSends++;
                }
                if (i % 300 == 0) {
                    JsonNode ok = good.request("{\"t\":\"send\",\"rid\":\"g" + i + "\",\"conv\":\"c-ab\",\"cmid\":\"good-" + i + "\",\"body\":\"still served\"}");
                    assertEquals("sent", ok.get("t").asText(), "a well-behaved client is served during the fuzzing");
                    freshSends++;
                }
            }
            fuzz.sendBinary(new byte[] {0, 1, 2});
            assertEquals("BINARY_UNSUPPORTED", fuzz.next().get("code").asText());
            // A flood without waiting for replies: every frame still gets exactly one reply.
            for (int i = 0; i < 3000; i++) fuzz.send("{\"t\":\"sub\",\"rid\":\"f" + i + "\"}");
            for (int i = 0; i < 3000; i++) {
                String t = fuzz.next().path("t").asText();
                assertTrue(t.equals("subbed") || t.equals("error"), t);
            }
            assertEquals("sent", good.request("{\"t\":\"send\",\"rid\":\"g-end\",\"conv\":\"c-ab\",\"cmid\":\"good-end\",\"body\":\"after the flood\"}")
                    .get("t").asText());
            freshSends++;
        } finally {
            fuzz.close();
        }
        System.out.println("fuzz seed " + seed + " replies " + replies + ", frames over the hard limit " + oversize);
        assertEquals(freshSends, fx.messages(), "seed " + seed + ": rows written == fresh `sent` replies, nothing else");
        // Invalid UTF-8 at the WebSocket layer: the connection is failed (1007), nothing written.
        for (int i = 0; i < 20; i++) {
            try (WireSocket w = new WireSocket(gw.port())) {
                byte[] junk = new byte[1 + r.nextInt(200)];
                r.nextBytes(junk);
                junk[0] = (byte) 0xC3;
                if (junk.length > 1) junk[1] = (byte) 0x28;
                w.sendText(junk);
                assertEquals(1007, w.readUntilClose());
            }
        }
        assertEquals(freshSends, fx.messages());
        Await.until(Duration.ofSeconds(30), () -> Thread.activeCount() <= threadsBefore + 40,
                "no thread leak (before " + threadsBefore + ", now " + Thread.activeCount() + ")");
    }

    @Test
    void randomAdminRequestsNeverFailInternallyAndWriteNothingWithoutTheToken() throws Exception {
        long seed = seed();
        Random r = new Random(seed);
        HttpClient http = HttpClient.newHttpClient();
        List<String> paths = List.of("/admin/users", "/admin/devices", "/admin/conversations", "/admin/conversations/c-ab",
                "/admin/conversations/c-ab/members/u-cy", "/admin/devices/d-ana/reinstall", "/admin/%2e%2e/etc", "/admin/",
                "/admin/conversations/" + "x".repeat(300), "/admin/users/../devices");
        List<String> methods = List.of("GET", "POST", "PUT", "DELETE", "PATCH");
        Set<Integer> statuses = new HashSet<>();
        long usersBefore = fx.count("SELECT count(*) FROM users");
        for (int i = 0; i < 400; i++) {
            boolean withToken = r.nextBoolean();
            String body = r.nextInt(4) == 0 ? randomText(r)
                    : mutate("{\"user\":\"u-f" + i + "\",\"device\":\"d-f" + i + "\",\"conv\":\"c-f" + i
                            + "\",\"kind\":\"group\",\"members\":[\"u-ana\"]}", r);
            HttpRequest.Builder b = HttpRequest.newBuilder(gw.admin(paths.get(r.nextInt(paths.size()))))
                    .method(methods.get(r.nextInt(methods.size())), HttpRequest.BodyPublishers.ofString(body));
            if (withToken) b.header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN);
            else if (r.nextBoolean()) b.header("Authorization", "Bearer " + randomText(r).replaceAll("[^A-Za-z0-9]", "x"));
            HttpResponse<String> resp;
            try {
                resp = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (IllegalArgumentException e) {
                continue;   // the client refused to build the request (e.g. an invalid URI); nothing reached the server
            }
            statuses.add(resp.statusCode());
            assertTrue(resp.statusCode() < 500, "seed " + seed + ": " + resp.statusCode() + " " + resp.body());
            if (!withToken) assertEquals(401, resp.statusCode(), "seed " + seed + ": without the token");
            JsonNode j = JSON.readTree(resp.body().getBytes(StandardCharsets.UTF_8));
            assertTrue(j.isObject(), "every reply is a JSON object");
        }
        System.out.println("admin fuzz seed " + seed + " statuses " + statuses);
        assertTrue(fx.count("SELECT count(*) FROM users") >= usersBefore);
    }

    private static String randomText(Random r) {
        byte[] b = new byte[r.nextInt(300)];
        r.nextBytes(b);
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
