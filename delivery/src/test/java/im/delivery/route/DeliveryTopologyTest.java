package im.delivery.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.kafka.TopicNames;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DeliveryTopology} under {@link TopologyTestDriver}: routing once per interested gateway,
 * CDC dedup by (conv, seq), interest updates (online / offline / stale offline), join notices,
 * leave, gateway liveness (lease and generation, lazily on routing and by the wall-clock sweep),
 * and tolerance of malformed input. Brief §5 "Routing".
 */
class DeliveryTopologyTest {
    private static final TopicNames TOPICS = new TopicNames("t.");
    /** The sweep runs every lease/2 = 5 s of wall-clock time. */
    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");

    @TempDir
    Path stateDir;

    private TopologyTestDriver driver;
    private TestInputTopic<String, String> events;
    private TestInputTopic<String, String> interest;
    private TestInputTopic<String, String> gateways;
    private TestOutputTopic<String, String> gwA;
    private TestOutputTopic<String, String> gwB;
    private TestOutputTopic<String, String> notices;
    /** The driver's wall clock (it only moves through {@link #advance}). */
    private long now;

    @BeforeEach
    void setUp() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "delivery-topology-test");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        driver = new TopologyTestDriver(DeliveryTopology.build(TOPICS, LEASE), p, T0);
        now = T0.toEpochMilli();
        StringSerializer ser = new StringSerializer();
        StringDeserializer de = new StringDeserializer();
        events = driver.createInputTopic(TOPICS.events(), ser, ser);
        interest = driver.createInputTopic(TOPICS.interest(), ser, ser);
        gateways = driver.createInputTopic(TOPICS.gateways(), ser, ser);
        gwA = driver.createOutputTopic(TOPICS.channel("gw-a"), de, de);
        gwB = driver.createOutputTopic(TOPICS.channel("gw-b"), de, de);
        notices = driver.createOutputTopic(TOPICS.notices(), de, de);
    }

    @AfterEach
    void tearDown() {
        if (driver != null) driver.close();
    }

    // ---------------------------------------------------------------- routing

    @Test
    void eventIsRoutedOncePerInterestedGatewayWithExactlyThatGatewaysDevices() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        online("c1", "d3", "u3", "gw-b", 1);
        online("c2", "d4", "u4", "gw-b", 1);   // another conversation: must not leak into c1's routes

        String ev = event("c1", 1, "msg", "u1");
        events.pipeInput("c1", ev);

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        List<TestRecord<String, String>> b = gwB.readRecordsToList();
        assertEquals(1, a.size(), "one record on gw-a's channel: " + a);
        assertEquals(1, b.size(), "one record on gw-b's channel: " + b);
        assertEquals("c1", a.get(0).key());
        assertEquals("c1", b.get(0).key());
        assertEquals(Set.of("d1", "d2"), devices(a.get(0)));
        assertEquals(Set.of("d3"), devices(b.get(0)));
        assertEquals(RouteJson.parse(ev), json(a.get(0)).get("ev"), "the event is carried unchanged");
        assertEquals(RouteJson.parse(ev), json(b.get(0)).get("ev"));
        assertEquals(1, json(a.get(0)).get("v").asInt());
        assertEquals(TOPICS.channel("gw-a"), destHeader(a.get(0)));
        assertEquals(TOPICS.channel("gw-b"), destHeader(b.get(0)));
        assertTrue(notices.isEmpty(), "a msg produces no notice");
        assertEquals(Set.of(TOPICS.channel("gw-a"), TOPICS.channel("gw-b")), outputTopics());
    }

    @Test
    void eventWithoutInterestIsNotRouted() {
        heartbeat("gw-a", 1, now);
        online("c2", "d1", "u1", "gw-a", 1);   // interest in another conversation only

        events.pipeInput("c1", event("c1", 1, "msg", "u9"));

        assertTrue(gwA.isEmpty());
        assertTrue(gwB.isEmpty());
        assertTrue(notices.isEmpty());
        assertEquals(Set.of(), outputTopics(), "nothing produced except changelogs");
    }

    @Test
    void duplicatesAreDroppedSoEachSeqIsRoutedOnce() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c2", "d1", "u1", "gw-a", 1);

        // A relay restart replays 2 and 3.
        for (long seq : new long[] {1, 2, 3, 2, 3, 4}) events.pipeInput("c1", event("c1", seq, "msg", "u1"));
        // The high-water mark is per conversation: c2's seq 1 is not a duplicate of c1's.
        events.pipeInput("c2", event("c2", 1, "msg", "u1"));
        // An identical copy of the very last one is also dropped.
        events.pipeInput("c2", event("c2", 1, "msg", "u1"));

        List<String> routed = gwA.readRecordsToList().stream()
                .map(r -> json(r).get("ev").get("conv").asText() + ":" + json(r).get("ev").get("seq").asLong())
                .toList();
        assertEquals(List.of("c1:1", "c1:2", "c1:3", "c1:4", "c2:1"), routed);
    }

    // ---------------------------------------------------------------- interest

    @Test
    void offlineRemovesTheDevice() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        offline("c1", "d1", "u1", "gw-a", 1);

        events.pipeInput("c1", event("c1", 1, "msg", "u2"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d2"), devices(a.get(0)));

        // The last device leaving empties the conversation's entry.
        offline("c1", "d2", "u2", "gw-a", 1);
        assertNull(interestStore().get("c1"), "an empty interest set is deleted");
        events.pipeInput("c1", event("c1", 2, "msg", "u2"));
        assertTrue(gwA.isEmpty());
    }

    @Test
    void staleOfflineDoesNotRemoveTheNewerRegistration() {
        heartbeat("gw-a", 2, now);
        heartbeat("gw-b", 1, now);
        // Older generation: gw-a restarted (gen 1 -> 2); a late offline of gen 1 must not remove gen 2's entry.
        online("c1", "d1", "u1", "gw-a", 2);
        offline("c1", "d1", "u1", "gw-a", 1);
        // Another gateway: d2 moved from gw-a to gw-b; gw-a's offline arrives after gw-b's online.
        online("c1", "d2", "u2", "gw-a", 2);
        online("c1", "d2", "u2", "gw-b", 1);
        offline("c1", "d2", "u2", "gw-a", 2);

        events.pipeInput("c1", event("c1", 1, "msg", "u1"));

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        List<TestRecord<String, String>> b = gwB.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d1"), devices(a.get(0)), "gen-2 registration survives a gen-1 offline");
        assertEquals(1, b.size());
        assertEquals(Set.of("d2"), devices(b.get(0)), "the device's new gateway keeps it");
    }

    // ---------------------------------------------------------------- membership

    @Test
    void joinProducesANoticeWithTheJoiningUserAndTheEvent() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);

        String join = event("c1", 7, "join", "u9");
        events.pipeInput("c1", join);

        List<TestRecord<String, String>> n = notices.readRecordsToList();
        assertEquals(1, n.size(), "one notice: " + n);
        JsonNode notice = json(n.get(0));
        assertEquals("c1", n.get(0).key());
        assertEquals(1, notice.get("v").asInt());
        assertEquals("join", notice.get("kind").asText());
        assertEquals("u9", notice.get("user").asText());
        assertEquals(RouteJson.parse(join), notice.get("ev"));
        assertEquals(TOPICS.notices(), destHeader(n.get(0)));
        // The existing members' devices get the join through their gateway's channel as usual.
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d1"), devices(a.get(0)));
        assertEquals("join", json(a.get(0)).get("ev").get("kind").asText());
    }

    @Test
    void joinWithoutAnyInterestStillProducesTheNotice() {
        // The first member's join: nobody is interested in the conversation yet.
        events.pipeInput("c1", event("c1", 1, "join", "u1"));
        List<TestRecord<String, String>> n = notices.readRecordsToList();
        assertEquals(1, n.size());
        assertEquals("u1", json(n.get(0)).get("user").asText());
        assertEquals(Set.of(TOPICS.notices()), outputTopics());
    }

    @Test
    void leaveIsRoutedToTheLeaversDevicesAndTheNextEventIsNot() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u1", "gw-b", 1);   // u1's second device
        online("c1", "d3", "u2", "gw-a", 1);

        events.pipeInput("c1", event("c1", 2, "leave", "u1"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        List<TestRecord<String, String>> b = gwB.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d1", "d3"), devices(a.get(0)), "the leaver's devices see their own leave");
        assertEquals(1, b.size());
        assertEquals(Set.of("d2"), devices(b.get(0)));
        assertTrue(notices.isEmpty(), "a leave produces no notice");

        events.pipeInput("c1", event("c1", 3, "msg", "u2"));
        a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d3"), devices(a.get(0)), "after the leave only the remaining member's device");
        assertTrue(gwB.isEmpty(), "gw-b held only the leaver's device");
        assertEquals(Set.of("d3"), storedDevices("c1").keySet());
    }

    // ---------------------------------------------------------------- liveness

    @Test
    void gatewayWhoseHeartbeatIsOlderThanTheLeaseStopsReceivingRoutes() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));
        assertEquals(1, gwA.readRecordsToList().size(), "both alive at first");
        assertEquals(1, gwB.readRecordsToList().size());

        // gw-b keeps beating; gw-a goes silent. Past the lease gw-a is dead.
        advance(Duration.ofSeconds(6));
        heartbeat("gw-b", 1, now);
        advance(Duration.ofSeconds(6));   // now = T0 + 12 s; gw-a last heard at T0, lease 10 s
        heartbeat("gw-b", 1, now);

        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        assertTrue(gwA.isEmpty(), "no route to a gateway silent for longer than the lease");
        List<TestRecord<String, String>> b = gwB.readRecordsToList();
        assertEquals(1, b.size());
        assertEquals(Set.of("d2"), devices(b.get(0)));
    }

    @Test
    void routingDropsADeadGatewaysEntriesLazilyWithoutWaitingForTheSweep() {
        // No wall-clock advance, so no sweep runs: only the router's own liveness check is at work.
        heartbeat("gw-a", 1, now - LEASE.toMillis() - 1);   // last heard just over a lease ago
        heartbeat("gw-b", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        assertEquals(Set.of("d1", "d2"), storedDevices("c1").keySet());

        events.pipeInput("c1", event("c1", 1, "msg", "u1"));

        assertTrue(gwA.isEmpty());
        assertEquals(Set.of("d2"), devices(gwB.readRecordsToList().get(0)));
        assertEquals(Set.of("d2"), storedDevices("c1").keySet(), "the dead gateway's entry is dropped from the store");
    }

    @Test
    void gatewayRestartedWithNewerGenerationLosesItsOldEntries() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)));

        // gw-a restarts as gen 2 (within the lease, so only the generation tells the old entries are dead);
        // d2 connects to the new incarnation, d1 does not come back.
        advance(Duration.ofSeconds(1));
        heartbeat("gw-a", 2, now);
        online("c1", "d2", "u2", "gw-a", 2);

        events.pipeInput("c1", event("c1", 2, "msg", "u2"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d2"), devices(a.get(0)), "gen-1 entries are dead once gen 2 heartbeats");
        assertEquals(Set.of("d2"), storedDevices("c1").keySet());
    }

    @Test
    void sweepRemovesDeadGatewayEntriesFromTheStore() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        heartbeat("gw-c", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        online("c2", "d3", "u3", "gw-a", 1);
        online("c3", "d4", "u4", "gw-c", 1);

        advance(Duration.ofSeconds(8));
        heartbeat("gw-b", 1, now);         // gw-b stays alive
        heartbeat("gw-c", 2, now);         // gw-c restarted: its gen-1 entries are dead
        advance(Duration.ofSeconds(4));
        heartbeat("gw-b", 1, now);         // gw-b keeps heartbeating (newest heartbeat: T0 + 12 s)
        advance(Duration.ofSeconds(4));    // T0 + 16 s: gw-a 12 s behind the newest heartbeat > lease; sweeps at 5, 10, 15 s

        // No event was routed: any removal below is the sweep's.
        assertEquals(Set.of(), outputTopics());
        assertEquals(Set.of("d2"), storedDevices("c1").keySet(), "gw-a's entry swept, gw-b's kept");
        assertNull(interestStore().get("c2"), "a conversation left with no entries is deleted");
        assertNull(interestStore().get("c3"), "gen-1 entries of a gateway now at gen 2 are swept");
    }

    @Test
    void aKafkaOutageWithNoHeartbeatsFromAnyoneExpiresNobody() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        advance(Duration.ofSeconds(30));   // no heartbeat from any gateway: the outage is ours, not theirs
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));
        assertEquals(1, gwA.readRecordsToList().size(), "routes survive an outage longer than the lease");
        assertEquals(Set.of("d1"), storedDevices("c1").keySet());
    }

    @Test
    void sweepKeepsEntriesOfLiveGateways() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        for (int i = 0; i < 6; i++) {       // 30 s of heartbeats every 5 s, well within the lease
            advance(Duration.ofSeconds(5));
            heartbeat("gw-a", 1, now);
        }
        assertEquals(Set.of("d1"), storedDevices("c1").keySet());
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)));
    }

    // ---------------------------------------------------------------- malformed input

    @Test
    void malformedEventIsIgnoredAndTheNextOneIsRouted() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);

        events.pipeInput("c1", "this is not JSON {");
        events.pipeInput("c1", (String) null);      // a tombstone
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(1, json(a.get(0)).get("ev").get("seq").asLong());
    }

    @Test
    void malformedInterestIsIgnoredAndTheNextOneIsApplied() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);

        interest.pipeInput("c1", "{not json");
        interest.pipeInput("c1", (String) null);
        online("c1", "d2", "u2", "gw-a", 1);
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d1", "d2"), devices(a.get(0)), "the earlier entry survives, the later one applies");
    }

    /*
     * Found by this test and fixed: a heartbeat value that is not JSON (or lacks "gen"/"at") is stored as is by the global-store
     * processor, and DeliveryTopology.alive() then calls RouteJson.parse(hb).get("gen").asLong() with no
     * guard: Router.process throws IllegalArgumentException (or NPE), i.e. the stream task dies on EVERY
     * event of a conversation that has an entry for that gateway, and the punctuator dies the same way.
     * With DeliveryNode's REPLACE_THREAD handler this is a crash loop until a valid heartbeat for the same
     * key overwrites it (never, if that gateway is dead). The event/interest sources guard their parse;
     * the heartbeat path should too (ignore the malformed heartbeat in the global processor, or treat an
     * unparsable one as unknown in alive()).
     */
    @Test
    void malformedHeartbeatDoesNotKillRouting() {
        heartbeat("gw-a", 1, now);
        online("c1", "d1", "u1", "gw-a", 1);
        gateways.pipeInput("gw-a", "garbage");
        gateways.pipeInput("gw-b", "{\"v\":1}");
        online("c1", "d2", "u2", "gw-b", 1);

        events.pipeInput("c1", event("c1", 1, "msg", "u1"));
        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        assertEquals(2, gwA.readRecordsToList().size(), "gw-a keeps its routes");
        assertEquals(2, gwB.readRecordsToList().size(), "gw-b (no usable heartbeat) counts as unknown, i.e. alive");
    }

    /*
     * Found by this test and fixed: a gateway that was down for longer than the lease restarts with gen 2. Its heartbeat and its interest
     * go to different topics consumed by different threads (global store vs. stream task), so the task can
     * see gen-2 interest (and an event) while the global store still holds the old gen-1 heartbeat. alive()
     * then judges the gen-2 entry by the gen-1 heartbeat's "at" (older than the lease) and the router
     * DELETES the fresh entry from the store for good: once the gen-2 heartbeat arrives, the device still
     * gets no pushes in that conversation until it reconnects. A heartbeat whose gen is LOWER than the
     * entry's proves nothing about the entry (the entry comes from a newer incarnation); alive() could
     * return true when hb.gen < entry.gen (as it does for an unknown gateway).
     */
    @Test
    void entryOfANewerGenerationSurvivesUntilItsHeartbeatArrives() {
        heartbeat("gw-a", 1, now);
        advance(Duration.ofSeconds(30));   // gw-a down for 30 s (> lease); nothing registered meanwhile
        online("c1", "d1", "u1", "gw-a", 2);
        events.pipeInput("c1", event("c1", 1, "msg", "u1"));   // processed before the gen-2 heartbeat lands
        gwA.readRecordsToList();
        heartbeat("gw-a", 2, now);

        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size(), "the gen-2 registration must still route once gen 2 heartbeats");
        assertEquals(Set.of("d1"), devices(a.get(0)));
    }

    // ---------------------------------------------------------------- helpers

    private void heartbeat(String gw, long gen, long at) {
        gateways.pipeInput(gw, RouteJson.heartbeat(gw, gen, at));
    }

    private void online(String conv, String device, String user, String gw, long gen) {
        interest.pipeInput(conv, RouteJson.interest(conv, device, user, gw, gen, true));
    }

    private void offline(String conv, String device, String user, String gw, long gen) {
        interest.pipeInput(conv, RouteJson.interest(conv, device, user, gw, gen, false));
    }

    /** The relay's event JSON. */
    private static String event(String conv, long seq, String kind, String sender) {
        var o = RouteJson.JSON.createObjectNode().put("v", 1).put("conv", conv).put("seq", seq).put("kind", kind)
                .put("mid", "00000000-0000-0000-0000-" + String.format("%012d", seq)).put("sender", sender)
                .put("device", "msg".equals(kind) ? sender + "-dev" : null)
                .put("cmid", "msg".equals(kind) ? "cm-" + seq : null)
                .put("body", "msg".equals(kind) ? "hello " + seq : "")
                .put("at", T0.toEpochMilli() + seq);
        return o.toString();
    }

    /** Advances the wall clock a second at a time, so that every due sweep runs. */
    private void advance(Duration d) {
        for (long ms = d.toMillis(); ms > 0; ms -= 1000) {
            long step = Math.min(1000, ms);
            driver.advanceWallClockTime(Duration.ofMillis(step));
            now += step;
        }
    }

    private static JsonNode json(TestRecord<String, String> r) {
        return RouteJson.parse(r.value());
    }

    private static Set<String> devices(TestRecord<String, String> r) {
        List<String> l = new ArrayList<>();
        json(r).get("devices").forEach(d -> l.add(d.asText()));
        assertEquals(l.size(), new TreeSet<>(l).size(), "no device listed twice: " + l);
        return new TreeSet<>(l);
    }

    private static String destHeader(TestRecord<String, String> r) {
        Header h = r.headers().lastHeader(DeliveryTopology.DEST_HEADER);
        assertNotNull(h, "routed record carries " + DeliveryTopology.DEST_HEADER);
        return new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Topics the topology produced to, other than its changelogs. */
    private Set<String> outputTopics() {
        return driver.producedTopicNames().stream().filter(t -> !t.endsWith("-changelog")).collect(Collectors.toSet());
    }

    private KeyValueStore<String, String> interestStore() {
        return driver.getKeyValueStore(DeliveryTopology.INTEREST_STORE);
    }

    /** device -> gateway of the stored interest set of a conversation. */
    private Map<String, String> storedDevices(String conv) {
        String json = interestStore().get(conv);
        Map<String, String> m = new TreeMap<>();
        if (json == null) return m;
        RouteJson.parse(json).fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().get("gateway").asText()));
        return m;
    }
}
