package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.RawSocket;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * docs/asyncapi.yaml against reality: a real relay, delivery node, sweeper and two gateways on real
 * PostgreSQL and Kafka; every frame type (every reachable error code included) is provoked over raw
 * WebSockets, every server frame received and every accepted client frame is validated against its
 * schema, every refused one must be refused by the schema too; then every record on the public topics
 * {@code events} and {@code cursors} (a deletion included) is validated.
 */
@ExtendWith(ImStackExtension.class)
class ContractIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final Contract contract = Contract.load();
    private final List<String> problems = new ArrayList<>();
    private final Set<String> serverTypes = new TreeSet<>();
    private final Set<String> codes = new TreeSet<>();

    /** A raw socket whose every request and reply goes through the contract. */
    private final class Checked implements AutoCloseable {
        final RawSocket s;

        Checked(java.net.URI uri) throws Exception {
            s = new RawSocket(uri);
        }

        /** Sends a frame the server must accept, and returns the server's reply. */
        JsonNode ok(String frame) throws Exception {
            check(JSON.readTree(frame).path("t").asText(), frame);
            s.send(frame);
            return reply(frame);
        }

        /** Sends a frame the server refuses with {@code code}; a schema refusal is expected for input errors. */
        JsonNode refused(String frame, String code, boolean schemaRefuses) throws Exception {
            if (schemaRefuses) {
                String t = JSON.readTree(frame).path("t").asText();
                if (contract.messages().contains(t) && contract.violations(t, frame).isEmpty()) {
                    problems.add("the schema of " + t + " accepts what the server refuses with " + code + ": " + frame);
                }
            }
            s.send(frame);
            JsonNode r = reply(frame);
            assertEquals(code, r.path("code").asText(), frame + " -> " + r);
            return r;
        }

        JsonNode next() throws Exception {
            JsonNode f = s.next();
            String t = f.path("t").asText();
            serverTypes.add(t);
            if (t.equals("error")) codes.add(f.path("code").asText());
            check(t, f.toString());
            return f;
        }

        /** Reads server frames (pushes may come first) until the one answering {@code frame}'s rid. */
        JsonNode reply(String frame) throws Exception {
            String rid = JSON.readTree(frame).path("rid").asText();
            long end = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < end) {
                JsonNode f = next();
                if (f.path("rid").asText().equals(rid)) return f;
                if (f.path("t").asText().equals("error") && !f.has("rid")) return f;   // the rid could not be read
            }
            throw new AssertionError("no reply to " + rid + " within " + WAIT);
        }

        /** Reads server frames until one of type {@code t}. */
        JsonNode until(String t) throws Exception {
            long end = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < end) {
                JsonNode f = next();
                if (f.path("t").asText().equals(t)) return f;
            }
            throw new AssertionError("no " + t + " frame within " + WAIT);
        }

        @Override
        public void close() {
            s.close();
        }
    }

    private void check(String message, String json) {
        List<String> v = contract.violations(message, json);
        if (!v.isEmpty()) problems.add(message + " " + json + ": " + v);
    }

    @Test
    void everyFrameAndEveryPublicRecordOfARealStackConformsToTheContract(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("c-ac", "direct", List.of("u-ana", "u-cy"));
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.SWEEP_MS.name(), "500", ConfigKeys.HINT_BACKOFF_MS.name(), "1000"))) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-a", "");
            Gateway lossy = p.addGateway("gw-b", "gw.push:drop");   // cy's pushes are lost: the sweeper hints
            p.awaitRunning();
            try (Checked ana = new Checked(Pipeline.ws(gw)); Checked bo = new Checked(Pipeline.ws(gw));
                 Checked cy = new Checked(Pipeline.ws(lossy)); Checked bad = new Checked(Pipeline.ws(gw))) {
                ana.refused("{\"t\":\"sub\",\"rid\":\"n0\"}", "NOT_AUTHENTICATED", false);
                ana.ok("{\"t\":\"auth\",\"rid\":\"a1\",\"token\":\"" + fx.anaToken + "\"}");
                ana.refused("{\"t\":\"auth\",\"rid\":\"a2\",\"token\":\"" + fx.anaToken + "\"}", "ALREADY_AUTHENTICATED", false);
                bo.ok("{\"t\":\"auth\",\"rid\":\"b1\",\"token\":\"" + fx.boToken + "\"}");
                bo.ok("{\"t\":\"sub\",\"rid\":\"b2\"}");
                cy.ok("{\"t\":\"auth\",\"rid\":\"c1\",\"token\":\"" + fx.cyToken + "\"}");
                cy.ok("{\"t\":\"sub\",\"rid\":\"c2\"}");
                ana.ok("{\"t\":\"sub\",\"rid\":\"a3\"}");

                ana.ok("{\"t\":\"send\",\"rid\":\"s1\",\"conv\":\"c-ab\",\"cmid\":\"k1\",\"body\":\"hello\"}");
                JsonNode dup = ana.ok("{\"t\":\"send\",\"rid\":\"s2\",\"conv\":\"c-ab\",\"cmid\":\"k1\",\"body\":\"hello\"}");
                bo.until("event");
                ana.ok("{\"t\":\"send\",\"rid\":\"s3\",\"conv\":\"c-ac\",\"cmid\":\"k2\",\"body\":\"to cy\"}");
                cy.until("hint");
                cy.ok("{\"t\":\"sync\",\"rid\":\"c3\",\"conv\":\"c-ac\",\"after\":0,\"limit\":2}");
                cy.ok("{\"t\":\"sync\",\"rid\":\"c4\",\"conv\":\"c-ac\",\"after\":2}");
                JsonNode first = cy.ok("{\"t\":\"catchup\",\"rid\":\"c6\",\"limit\":1}");
                assertTrue(first.path("more").asBoolean(), "cy has acknowledged nothing: " + first);
                cy.ok("{\"t\":\"catchup\",\"rid\":\"c7\",\"after\":\"" + first.path("after").asText() + "\"}");
                ana.ok("{\"t\":\"sub\",\"rid\":\"a4\",\"after\":\"c-ab\",\"limit\":1}");
                bo.ok("{\"t\":\"ack\",\"rid\":\"b3\",\"conv\":\"c-ab\",\"seq\":3}");
                bo.refused("{\"t\":\"ack\",\"rid\":\"b4\",\"conv\":\"c-ab\",\"seq\":99}", "CURSOR_AHEAD", false);
                cy.refused("{\"t\":\"send\",\"rid\":\"c5\",\"conv\":\"c-ab\",\"cmid\":\"k3\",\"body\":\"x\"}", "NOT_MEMBER", false);
                ana.refused("{\"t\":\"send\",\"rid\":\"s4\",\"conv\":\"c-none\",\"cmid\":\"k4\",\"body\":\"x\"}", "NOT_MEMBER", false);
                ana.refused("{\"t\":\"send\",\"rid\":\"s5\",\"conv\":\"c-ab\",\"cmid\":\"k1\",\"body\":\"changed\"}", "CMID_CONFLICT", false);
                // Edit and recall of ana's message at seq 3 (c-ab's joins are 1 and 2): the pushes to bo, the
                // refusals, and the tombstone a sync returns go through the contract.
                ana.ok("{\"t\":\"edit\",\"rid\":\"d1\",\"conv\":\"c-ab\",\"cmid\":\"k8\",\"seq\":3,\"body\":\"hello, edited\"}");
                bo.refused("{\"t\":\"edit\",\"rid\":\"d2\",\"conv\":\"c-ab\",\"cmid\":\"k9\",\"seq\":3,\"body\":\"x\"}", "NOT_SENDER", false);
                ana.refused("{\"t\":\"recall\",\"rid\":\"d3\",\"conv\":\"c-ab\",\"cmid\":\"k10\",\"seq\":1}", "NOT_A_MESSAGE", false);
                ana.ok("{\"t\":\"recall\",\"rid\":\"d4\",\"conv\":\"c-ab\",\"cmid\":\"k11\",\"seq\":3}");
                ana.refused("{\"t\":\"edit\",\"rid\":\"d5\",\"conv\":\"c-ab\",\"cmid\":\"k12\",\"seq\":3,\"body\":\"x\"}", "RECALLED", false);
                ana.refused("{\"t\":\"edit\",\"rid\":\"e12\",\"conv\":\"c-ab\",\"cmid\":\"k13\",\"seq\":0,\"body\":\"x\"}", "BAD_FIELD", true);
                JsonNode tombstones = bo.ok("{\"t\":\"sync\",\"rid\":\"b5\",\"conv\":\"c-ab\",\"after\":2}");
                assertTrue(tombstones.path("events").path(0).path("recalled").asBoolean(), "seq 3 is a tombstone: " + tombstones);
                // Input errors: the schema refuses them as the codec does.
                ana.refused("{\"t\":\"ack\",\"rid\":\"e1\",\"conv\":\"c-ab\",\"seq\":\"3\"}", "BAD_FIELD", true);
                ana.refused("{\"t\":\"ack\",\"rid\":\"e2\",\"conv\":\"c-ab\"}", "MISSING_FIELD", true);
                ana.refused("{\"t\":\"sub\",\"rid\":\"e3\",\"x\":1}", "BAD_FIELD", true);
                ana.refused("{\"t\":\"sub\",\"rid\":\"e10\",\"limit\":1001}", "BAD_FIELD", true);
                ana.refused("{\"t\":\"catchup\",\"rid\":\"e11\",\"after\":\"c-ab\"}", "BAD_FIELD", true);
                ana.refused("{\"t\":\"nope\",\"rid\":\"e4\"}", "UNKNOWN_TYPE", false);
                ana.refused("{\"t\":\"send\",\"rid\":\"e5\",\"conv\":\"c-ab\",\"cmid\":\"k5\",\"body\":\"" + "x".repeat(16_385) + "\"}",
                        "BODY_TOO_LARGE", true);
                ana.refused("{\"t\":\"send\",\"rid\":\"e6\",\"conv\":\"c-ab\",\"cmid\":\"k6\",\"body\":\"" + "x".repeat(70_000) + "\"}",
                        "FRAME_TOO_LARGE", true);
                ana.refused("{\"t\":\"sub\",\"rid\":\"e7\",\"rid\":\"e8\"}", "BAD_JSON", false);
                ana.refused("{\"t\":\"send\",\"rid\":\"e9\",\"conv\":\"c-ab\",\"cmid\":\"k7\",\"body\":\"\\ud800\"}", "BAD_UTF8", false);
                ana.s.sendBinary("x".getBytes(StandardCharsets.UTF_8));
                assertEquals("BINARY_UNSUPPORTED", ana.next().path("code").asText());
                bad.refused("{\"t\":\"auth\",\"rid\":\"x1\",\"token\":\"imt_not-a-token\"}", "BAD_TOKEN", false);
                assertEquals(4001, bad.s.awaitClose());

                // A reinstall: STALE_INSTALL on bo's socket, and a cursor deletion record on the topic.
                fx.dir.reinstallDevice("d-bo");
                JsonNode stale = bo.until("error");
                assertEquals("STALE_INSTALL", stale.path("code").asText());
                assertTrue(dup.path("dup").asBoolean(), "the resend was a duplicate: " + dup);
            }
            Set<String> allServer = Set.of("authed", "sent", "acked", "subbed", "synced", "caughtup", "event", "hint", "error");
            assertEquals(allServer, serverTypes, "every server frame type was seen");
            // every code a device can be sent, but the retriable ones (UNKNOWN_CONV is never sent: NOT_MEMBER answers for it)
            assertTrue(codes.size() >= 15, "error codes seen: " + codes);
            assertFalse(codes.contains("UNKNOWN_CONV"), "a missing conversation is answered NOT_MEMBER: " + codes);

            List<String> seen = readPublicTopics(p, fx);
            assertEquals(Set.of("eventRecord", "cursorUpdate", "cursorDeleted"), new TreeSet<>(seen), "every public record type was read");
        }
        assertEquals(List.of(), problems, "frames or records that do not conform to docs/asyncapi.yaml");
    }

    /** Reads both public topics from the start until every record type was seen; validates each record. */
    private List<String> readPublicTopics(Pipeline p, Fixture fx) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, p.settings.required(ConfigKeys.KAFKA_BOOTSTRAP));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "contract-" + p.stack.database());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(p.topics.events(), p.topics.cursors()));
            long expectedEvents = fx.count("SELECT count(*) FROM events");
            long events = 0;
            long end = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < end && !(events >= expectedEvents && seen.contains("cursorDeleted") && seen.contains("cursorUpdate"))) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    JsonNode v;
                    try {
                        v = JSON.readTree(r.value());
                    } catch (java.io.IOException e) {
                        problems.add(r.topic() + " value is not JSON: " + r.value());
                        continue;
                    }
                    String message = r.topic().equals(p.topics.events()) ? "eventRecord" : Contract.cursorMessage(v);
                    if (message.equals("eventRecord")) events++;
                    if (!v.path("conv").asText().equals(r.key())) problems.add(r.topic() + " key " + r.key() + " is not the conv of " + v);
                    check(message, r.value());
                    seen.add(message);
                }
            }
            assertFalse(seen.isEmpty(), "records were read");
            assertTrue(events >= expectedEvents, events + " of " + expectedEvents + " events read");
        }
        return seen;
    }
}
