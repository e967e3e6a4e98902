package im.delivery.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.infra.kafka.TopicNames;
import im.streams.ConvLogStore;
import im.topics.Interest;
import im.topics.PairKey;
import im.topics.Period;
import im.topics.RouteJson;
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
 * {@link DeliveryTopology} under {@link TopologyTestDriver}: routing once per gateway to exactly
 * the devices whose user may see the seq per the conversation's own log (join/leave events),
 * CDC dedup by (conv, seq), the interest merge rule (versions, withdrawals are final), membership
 * notices, gateway liveness that skips silent gateways without forgetting them, the interest digests,
 * garbage removal, and tolerance of malformed input. Brief §5 "Routing", issue 10.
 */
class DeliveryTopologyTest {
    private static final TopicNames TOPICS = new TopicNames("t.");
    /** The sweep runs every lease/2 = 5 s of wall-clock time. */
    private static final Duration LEASE = Duration.ofSeconds(10);
    /** Digest interval: a withdrawal, or a gateway silent, for 6 x 1 s + the lease is garbage. */
    private static final Duration RENEW = Duration.ofSeconds(1);
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
        driver = new TopologyTestDriver(DeliveryTopology.build(TOPICS, LEASE, RENEW), p, T0);
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
    void eventIsRoutedOncePerGatewayToTheMembersDevicesOnly() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2", "u3");                 // seqs 1..3
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        online("c1", "d3", "u3", "gw-b", 1);
        online("c1", "d9", "u9", "gw-b", 1);           // registered, but u9 never joined c1
        online("c2", "d4", "u4", "gw-b", 1);           // another conversation
        gwA.readRecordsToList();
        gwB.readRecordsToList();
        notices.readRecordsToList();

        String ev = event("c1", 4, "msg", "u1");
        events.pipeInput("c1", ev);

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        List<TestRecord<String, String>> b = gwB.readRecordsToList();
        assertEquals(1, a.size(), "one record on gw-a's channel: " + a);
        assertEquals(1, b.size(), "one record on gw-b's channel: " + b);
        assertEquals("c1", a.get(0).key());
        assertEquals(Set.of("d1", "d2"), devices(a.get(0)));
        assertEquals(Set.of("d3"), devices(b.get(0)), "a registration gives no visibility: d9 is not a member's device");
        assertEquals(RouteJson.parse(ev), json(a.get(0)).get("ev"), "the event is carried unchanged");
        assertEquals(TOPICS.channel("gw-a"), destHeader(a.get(0)));
        assertTrue(notices.isEmpty(), "a msg produces no notice");
    }

    @Test
    void aRemovedMemberGetsNothingWhateverItsRegistrationsSay() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u3");                        // 1, 2
        online("c1", "d3", "u3", "gw-a", 1);
        for (int i = 0; i < 10; i++) {                  // churn: leave, rejoin, ... (3..22)
            events.pipeInput("c1", event("c1", 3 + 2L * i, "leave", "u3"));
            events.pipeInput("c1", event("c1", 4 + 2L * i, "join", "u3"));
        }
        events.pipeInput("c1", event("c1", 23, "leave", "u3"));
        // Late registrations of the removed member (a join notice handled after the leave) arrive now.
        online("c1", "d3", "u3", "gw-a", 1);
        gwA.readRecordsToList();
        for (long seq = 24; seq < 34; seq++) events.pipeInput("c1", event("c1", seq, "msg", "u1"));
        assertTrue(gwA.isEmpty(), "nothing after the final leave reaches the removed member's device");
    }

    @Test
    void leaveIsRoutedToTheLeaversDevicesAndTheNextEventIsNot() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");                        // 1, 2
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u1", "gw-b", 1);            // u1's second device
        online("c1", "d3", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        gwB.readRecordsToList();
        notices.readRecordsToList();

        events.pipeInput("c1", event("c1", 3, "leave", "u1"));
        assertEquals(Set.of("d1", "d3"), devices(gwA.readRecordsToList().get(0)), "the leaver sees its own leave");
        assertEquals(Set.of("d2"), devices(gwB.readRecordsToList().get(0)));
        List<TestRecord<String, String>> n = notices.readRecordsToList();
        assertEquals(1, n.size(), "a leave produces a notice: " + n);
        assertEquals("leave", json(n.get(0)).get("kind").asText());
        assertEquals("u1", json(n.get(0)).get("user").asText());

        events.pipeInput("c1", event("c1", 4, "msg", "u2"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d3"), devices(a.get(0)), "after the leave only the remaining member's device");
        assertTrue(gwB.isEmpty(), "gw-b held only the leaver's device");
    }

    @Test
    void aRejoinWhoseRegistrationArrivedBeforeTheLeaveStillGetsPushes() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");                        // 1, 2
        online("c1", "d2", "u2", "gw-a", 1);
        events.pipeInput("c1", event("c1", 3, "leave", "u2"));
        events.pipeInput("c1", event("c1", 4, "join", "u2"));
        gwA.readRecordsToList();
        events.pipeInput("c1", event("c1", 5, "msg", "u1"));
        TestRecord<String, String> r = gwA.readRecordsToList().get(0);
        assertEquals(Set.of("d2"), devices(r));
        assertEquals(4, json(r).get("from").get("d2").asLong(),
                "the route names the period's start, so the gateway need not wait for the join notice");
    }

    @Test
    void joinProducesANoticeWithTheJoiningUserAndTheEvent() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1");
        online("c1", "d1", "u1", "gw-a", 1);
        notices.readRecordsToList();
        gwA.readRecordsToList();

        String join = event("c1", 7, "join", "u9");
        events.pipeInput("c1", join);

        List<TestRecord<String, String>> n = notices.readRecordsToList();
        assertEquals(1, n.size(), "one notice: " + n);
        JsonNode notice = json(n.get(0));
        assertEquals("c1", n.get(0).key());
        assertEquals("join", notice.get("kind").asText());
        assertEquals("u9", notice.get("user").asText());
        assertEquals(RouteJson.parse(join), notice.get("ev"));
        assertEquals(TOPICS.notices(), destHeader(n.get(0)));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)), "existing members get the join on their channel");
    }

    /**
     * One bulk join opens the period of every user it lists at its seq: one notice names them all
     * (gateways register their devices from it), existing members get the join without the list,
     * and a bulk-added member who leaves gets nothing after its leave, even when the bulk join is
     * replayed.
     */
    @Test
    void aBulkJoinOpensEveryListedUsersPeriodAtItsSeqWithOneNoticeAndNoListOnTheChannels() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1");                                                 // seq 1
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);                               // registered before its join
        online("c1", "d3", "u3", "gw-b", 1);
        notices.readRecordsToList();
        gwA.readRecordsToList();

        String bulk = bulkJoin("c1", 2, "u2", "u3", "u4");
        events.pipeInput("c1", bulk);
        List<TestRecord<String, String>> n = notices.readRecordsToList();
        assertEquals(1, n.size(), "one notice for the whole bulk: " + n);
        assertEquals(RouteJson.parse(bulk), json(n.get(0)).get("ev"), "the notice carries the users");
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(Set.of("d1", "d2"), devices(a.get(0)));
        JsonNode pushed = json(a.get(0)).get("ev");
        assertEquals(3, pushed.get("count").asInt());
        assertNull(pushed.get("users"), "a channel record never carries the roster: " + pushed);
        assertEquals(2, json(a.get(0)).get("from").get("d2").asLong(), "u2's period starts at the bulk join");
        assertEquals(Set.of("d3"), devices(gwB.readRecordsToList().get(0)));

        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d1", "d2"), devices(gwA.readRecordsToList().get(0)));
        assertEquals(Set.of("d3"), devices(gwB.readRecordsToList().get(0)));

        events.pipeInput("c1", event("c1", 4, "leave", "u3"));
        events.pipeInput("c1", bulk);                                       // a CDC replay of the bulk join
        gwA.readRecordsToList();
        gwB.readRecordsToList();
        events.pipeInput("c1", event("c1", 5, "msg", "u1"));
        assertEquals(Set.of("d1", "d2"), devices(gwA.readRecordsToList().get(0)));
        assertTrue(gwB.isEmpty(), "u3 left at 4; the replayed join at 2 does not reopen its period");
    }

    @Test
    void aBulkJoinWithoutItsUsersIsMalformedAndChangesNothing() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1");
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        notices.readRecordsToList();
        ObjectNode compact = (ObjectNode) RouteJson.parse(bulkJoin("c1", 2, "u2", "u3"));
        compact.remove("users");
        events.pipeInput("c1", compact.toString());
        assertTrue(gwA.isEmpty() && notices.isEmpty(), "neither routed nor noticed");
        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)), "u2's period was never opened");
    }

    @Test
    void duplicatesAreDroppedSoEachSeqIsRoutedOnce() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1");
        events.pipeInput("c2", event("c2", 1, "join", "u1"));
        online("c1", "d1", "u1", "gw-a", 1);
        online("c2", "d1", "u1", "gw-a", 1);
        gwA.readRecordsToList();

        for (long seq : new long[] {2, 3, 4, 3, 4, 5}) events.pipeInput("c1", event("c1", seq, "msg", "u1"));
        events.pipeInput("c2", event("c2", 2, "msg", "u1"));
        events.pipeInput("c2", event("c2", 2, "msg", "u1"));

        List<String> routed = gwA.readRecordsToList().stream()
                .map(r -> json(r).get("ev").get("conv").asText() + ":" + json(r).get("ev").get("seq").asLong())
                .toList();
        assertEquals(List.of("c1:2", "c1:3", "c1:4", "c1:5", "c2:2"), routed);
    }

    /**
     * The router keeps decoded logs and interest sets between events; what the stores hold (a
     * restore from the changelog, say) must still decide, never a copy decoded before.
     */
    @Test
    void theStoresDecideNotWhatTheRouterDecodedBefore() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d1", "d2"), devices(gwA.readRecordsToList().get(0)));

        // The stores change under the router: the log now says u2 left at 4 and the head is 9;
        // d1 moved to gw-b.
        driver.<String, String>getKeyValueStore(ConvLogStore.PERIODS).put(PairKey.of("c1", "u2"), new Period(2, 4).encode());
        driver.<String, Long>getKeyValueStore(ConvLogStore.HEADS).put("c1", 9L);
        String d1 = interestStore().get(PairKey.of("c1", "d1")).replace("\"gateway\":\"gw-a\"", "\"gateway\":\"gw-b\"");
        interestStore().put(PairKey.of("c1", "d1"), d1);

        events.pipeInput("c1", event("c1", 9, "msg", "u1"));
        assertTrue(gwA.isEmpty() && gwB.isEmpty(), "seq 9 is at the stored head: a duplicate");
        events.pipeInput("c1", event("c1", 10, "msg", "u1"));
        assertTrue(gwA.isEmpty(), "u2 left per the stored log, d1 is on gw-b per the stored set");
        assertEquals(Set.of("d1"), devices(gwB.readRecordsToList().get(0)));
    }

    /**
     * Head and periods are separate store entries: a crash can keep the head's write of a join and
     * lose the period's. The replayed join (at the head now) restores the period; a replayed older
     * join never reopens a period that a later leave closed.
     */
    @Test
    void aReplayedJoinRestoresAPeriodLostInACrashAndAnOldOneNeverReopens() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");                       // seqs 1, 2
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-a", 1);
        driver.getKeyValueStore(ConvLogStore.PERIODS).delete(PairKey.of("c1", "u2"));   // the write the crash lost
        events.pipeInput("c1", event("c1", 2, "join", "u2"));                          // the replay
        events.pipeInput("c1", event("c1", 3, "leave", "u1"));
        events.pipeInput("c1", event("c1", 1, "join", "u1"));                          // a late replay of u1's join
        gwA.readRecordsToList();
        events.pipeInput("c1", event("c1", 4, "msg", "u2"));
        assertEquals(Set.of("d2"), devices(gwA.readRecordsToList().get(0)), "u2 is a member again, u1 stays out");
    }

    // ---------------------------------------------------------------- interest

    @Test
    void offlineOfTheSameConnectionIsFinalAndAnOlderVersionNeverOverrides() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        long v1 = online("c1", "d1", "u1", "gw-a", 1);
        offline("c1", "d1", "u1", "gw-a", 1, v1);
        interest.pipeInput("c1", new im.topics.InterestRecord("c1", "d1", new Interest("u1", "gw-a", 1, v1, true, now)).toJson());   // late
        // d2 moved from gw-a (older connection) to gw-b; gw-a's late registration and withdrawal follow.
        long old = ++version;
        long moved = online("c1", "d2", "u2", "gw-b", 1);
        interest.pipeInput("c1", new im.topics.InterestRecord("c1", "d2", new Interest("u2", "gw-a", 1, old, true, now)).toJson());
        offline("c1", "d2", "u2", "gw-a", 1, old);
        assertTrue(moved > old);
        gwA.readRecordsToList();
        gwB.readRecordsToList();

        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertTrue(gwA.isEmpty(), "a closed connection's late registration does not come back");
        assertEquals(Set.of("d2"), devices(gwB.readRecordsToList().get(0)), "the newer connection keeps the device");
    }

    // ---------------------------------------------------------------- liveness and lease

    @Test
    void aSilentGatewayIsSkippedAndGetsItsRoutesBackWhenItHeartbeats() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        gwA.readRecordsToList();
        gwB.readRecordsToList();

        // gw-a freezes for 12 s (> lease 10 s) while gw-b keeps beating.
        for (int i = 0; i < 12; i++) {
            advance(Duration.ofSeconds(1));
            heartbeat("gw-b", 1, now);
        }
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertTrue(gwA.isEmpty(), "no route to a gateway silent for longer than the lease");
        assertEquals(Set.of("d2"), devices(gwB.readRecordsToList().get(0)));
        assertEquals(Set.of("d1", "d2"), storedDevices("c1").keySet(), "a silent gateway's entries are kept");

        // gw-a thaws: a heartbeat, nothing else. Routes are back without the device reconnecting.
        heartbeat("gw-a", 1, now);
        events.pipeInput("c1", event("c1", 4, "msg", "u1"));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)));
    }

    /** A registration whose publish was lost is found by the gateway's digest and comes back with the re-send. */
    @Test
    void aLostRegistrationIsFoundByTwoDisagreeingDigestsAndComesBackWithTheResend() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");
        long v1 = ++version;                       // d1's registration: published by the gateway, lost on the way
        versionOf.put("c1/d1", v1);
        long v2 = online("c1", "d2", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        List<long[]> held = List.of(term("c1", "d1", v1), term("c1", "d2", v2));

        digest("gw-a", 1, -1, held);
        assertTrue(gwA.isEmpty(), "one disagreeing digest asks nothing (a registration may be on its way)");
        advance(RENEW);
        digest("gw-a", 1, -1, held);
        List<TestRecord<String, String>> asked = gwA.readRecordsToList();
        assertEquals(1, asked.size(), "the second in a row asks the gateway for the partition: " + asked);
        assertEquals(new im.topics.ChannelRecord.Resync(0, 1), im.topics.ChannelRecord.read(asked.get(0).value()));
        digest("gw-a", 1, -1, held);
        assertTrue(gwA.isEmpty(), "not asked again while the re-send is on its way");

        long since = now;
        renew("c1", "d1", "u1", "gw-a", 1);        // the re-send
        renew("c1", "d2", "u2", "gw-a", 1);
        digest("gw-a", 1, since, held);
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d1", "d2"), devices(gwA.readRecordsToList().get(0)));
        advance(RENEW);
        digest("gw-a", 1, -1, held);
        assertTrue(gwA.isEmpty(), "the digests agree again");
    }

    /** A registration whose withdrawal was lost is withdrawn when a re-send ends without it. */
    @Test
    void aRegistrationTheGatewayNoLongerHoldsIsWithdrawnWhenAResendEndsWithoutIt() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);      // its withdrawal will be lost
        long v2 = online("c1", "d2", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        List<long[]> held = List.of(term("c1", "d2", v2));
        digest("gw-a", 1, -1, held);
        advance(RENEW);
        digest("gw-a", 1, -1, held);
        assertEquals(1, gwA.readRecordsToList().size(), "asked for the re-send");
        advance(Duration.ofMillis(10));
        long since = now;
        renew("c1", "d2", "u2", "gw-a", 1);
        digest("gw-a", 1, since, held);
        assertFalse(RouteJson.parse(interestStore().get(PairKey.of("c1", "d1"))).get("online").asBoolean(),
                "d1 was not written again: withdrawn");
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d2"), devices(gwA.readRecordsToList().get(0)));
    }

    /**
     * Digests that agree cost no write and ask nothing, also while a device's old socket lingers on
     * another gateway (each gateway counts what it holds) and after a same-gateway reconnect.
     */
    @Test
    void agreeingDigestsAskNothingAndRewriteNothing() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        long a1 = online("c1", "d1", "u1", "gw-a", 1);
        long a2 = online("c1", "d2", "u2", "gw-a", 1);
        long b1 = online("c1", "d1", "u1", "gw-b", 1);   // d1 moved to gw-b; its old socket on gw-a is still open
        long a2b = online("c1", "d2", "u2", "gw-a", 1);  // d2 reconnected to gw-a: the newer connection replaces the older
        gwA.readRecordsToList();
        gwB.readRecordsToList();
        long stored = storedAt("c1", "d1");
        for (int i = 0; i < 5; i++) {
            advance(RENEW);
            digest("gw-a", 1, -1, List.of(term("c1", "d1", a1), term("c1", "d2", a2b)));
            digest("gw-b", 1, -1, List.of(term("c1", "d1", b1)));
        }
        assertTrue(gwA.isEmpty() && gwB.isEmpty(), "nothing asked");
        assertEquals(stored, storedAt("c1", "d1"), "nothing rewritten");
        offline("c1", "d1", "u1", "gw-a", 1, a1);       // the old socket on gw-a closes
        offline("c1", "d2", "u2", "gw-a", 1, a2);       // the replaced connection closes
        for (int i = 0; i < 3; i++) {
            advance(RENEW);
            digest("gw-a", 1, -1, List.of(term("c1", "d2", a2b)));
        }
        assertTrue(gwA.isEmpty(), "still nothing asked");
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d2"), devices(gwA.readRecordsToList().get(0)));
        assertEquals(Set.of("d1"), devices(gwB.readRecordsToList().get(0)));
    }

    /** The digests are kept in memory; after a restart they are recounted from the logged entries, so nothing is asked. */
    @Test
    void digestsLostWithARestartAreRecountedFromTheLoggedEntries() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");
        long v1 = online("c1", "d1", "u1", "gw-a", 1);
        long v2 = online("c1", "d2", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        org.apache.kafka.streams.state.KeyValueStore<String, String> digests = driver.getKeyValueStore(im.streams.InterestLedger.DIGESTS);
        digests.delete("gw-a");                     // what a restart of the task leaves: the in-memory store is empty
        for (int i = 0; i < 3; i++) {
            advance(RENEW);
            digest("gw-a", 1, -1, List.of(term("c1", "d1", v1), term("c1", "d2", v2)));
        }
        assertTrue(gwA.isEmpty(), "nothing asked: " + digests.get("gw-a"));
    }

    @Test
    void aGatewayGoneForGoodLosesItsEntriesAndOneThatKeepsBeatingKeepsThemUnrenewed() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        for (int i = 0; i < 20; i++) {             // horizon = 6 x 1 s + 10 s; gw-a is gone, gw-b beats
            advance(Duration.ofSeconds(1));
            heartbeat("gw-b", 1, now);
        }
        assertEquals(Set.of("d2"), storedDevices("c1").keySet());
    }

    private long storedAt(String conv, String device) {
        return RouteJson.parse(interestStore().get(PairKey.of(conv, device))).get("at").asLong();
    }

    @Test
    void gatewayRestartedWithNewerGenerationLosesItsOldEntries() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);
        advance(Duration.ofSeconds(1));
        heartbeat("gw-a", 2, now);
        online("c1", "d2", "u2", "gw-a", 2);
        gwA.readRecordsToList();

        events.pipeInput("c1", event("c1", 3, "msg", "u2"));
        assertEquals(Set.of("d2"), devices(gwA.readRecordsToList().get(0)), "gen-1 entries are dead once gen 2 heartbeats");
        advance(Duration.ofSeconds(6));        // a sweep runs: they are garbage
        assertEquals(Set.of("d2"), storedDevices("c1").keySet());
    }

    @Test
    void sweepRemovesOnlyGarbage() {
        heartbeat("gw-a", 1, now);
        heartbeat("gw-b", 1, now);
        joins("c1", "u1", "u2");
        long v = online("c1", "d1", "u1", "gw-a", 1);
        online("c1", "d2", "u2", "gw-b", 1);
        offline("c1", "d1", "u1", "gw-a", 1, v);
        // horizon = 6 x 1 s + 10 s = 16 s behind the newest heartbeat; gw-b keeps beating.
        for (int i = 0; i < 20; i++) {
            advance(Duration.ofSeconds(1));
            heartbeat("gw-b", 1, now);
        }
        assertEquals(Set.of("d2"), storedDevices("c1").keySet(), "the old withdrawal is swept, the live gateway's entry kept");
    }

    @Test
    void aKafkaOutageWithNoHeartbeatsFromAnyoneExpiresNobody() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1");
        online("c1", "d1", "u1", "gw-a", 1);
        gwA.readRecordsToList();
        advance(Duration.ofSeconds(30));   // no heartbeat or renewal from anyone: the outage is ours, not theirs
        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        assertEquals(1, gwA.readRecordsToList().size(), "routes survive an outage longer than the lease");
    }

    @Test
    void entryOfANewerGenerationSurvivesUntilItsHeartbeatArrives() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1");
        advance(Duration.ofSeconds(30));
        online("c1", "d1", "u1", "gw-a", 2);
        events.pipeInput("c1", event("c1", 2, "msg", "u1"));
        gwA.readRecordsToList();
        heartbeat("gw-a", 2, now);
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        assertEquals(Set.of("d1"), devices(gwA.readRecordsToList().get(0)));
    }

    // ---------------------------------------------------------------- malformed input

    @Test
    void malformedRecordsAreIgnoredAndTheNextOnesApply() {
        heartbeat("gw-a", 1, now);
        joins("c1", "u1", "u2");
        online("c1", "d1", "u1", "gw-a", 1);
        events.pipeInput("c1", "this is not JSON {");
        events.pipeInput("c1", (String) null);
        events.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\",\"kind\":\"msg\"}");          // no seq: never read as 0
        events.pipeInput("c1", event("c1", 3, "msg", "u1").replace("\"seq\":3", "\"seq\":\"3\""));   // seq mistyped
        events.pipeInput("c1", event("c1", 3, "msg", "u1").replace("\"kind\":\"msg\"", "\"kind\":\"edit\""));   // unknown kind
        interest.pipeInput("c1", "{not json");
        interest.pipeInput("c1", (String) null);
        interest.pipeInput("c1", "{\"v\":2,\"conv\":\"c1\",\"device\":\"d7\",\"user\":\"u2\",\"gateway\":\"gw-a\",\"gen\":1,\"online\":true}");  // no ver/at
        gateways.pipeInput("gw-b", "garbage");
        online("c1", "d2", "u2", "gw-a", 1);
        gwA.readRecordsToList();
        events.pipeInput("c1", event("c1", 3, "msg", "u1"));
        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size());
        assertEquals(3, json(a.get(0)).get("ev").get("seq").asLong());
        assertEquals(Set.of("d1", "d2"), devices(a.get(0)));
    }

    // ---------------------------------------------------------------- helpers

    private void heartbeat(String gw, long gen, long at) {
        gateways.pipeInput(gw, new im.topics.Heartbeat(gw, gen, at).toJson());
    }

    /** Connection versions, growing like a gateway's. */
    private long version;
    private final Map<String, Long> versionOf = new java.util.HashMap<>();

    /** A new connection of the device registers; returns its version. */
    private long online(String conv, String device, String user, String gw, long gen) {
        long v = ++version;
        versionOf.put(conv + "/" + device, v);
        interest.pipeInput(conv, new im.topics.InterestRecord(conv, device, new Interest(user, gw, gen, v, true, now)).toJson());
        return v;
    }

    /** A registration's term in a gateway's digest: {conv, device, ver} folded as the gateway does. */
    private static long[] term(String conv, String device, long ver) {
        return new long[] {im.topics.InterestDigest.term(conv, device, ver)};
    }

    /** The gateway's digest of partition 0 (the driver's only one) over {@code held}; {@code since} >= 0 ends a re-send. */
    private void digest(String gw, long gen, long since, List<long[]> held) {
        long sum = 0;
        for (long[] t : held) sum += t[0];
        interest.pipeInput(gw, new im.topics.InterestDigest(gw, gen, 0, held.size(), sum, since, now).toJson());
    }

    /** The same connection's registration, written again now (a re-send). */
    private void renew(String conv, String device, String user, String gw, long gen) {
        interest.pipeInput(conv, new im.topics.InterestRecord(conv, device, new Interest(user, gw, gen, versionOf.get(conv + "/" + device), true, now)).toJson());
    }

    private void offline(String conv, String device, String user, String gw, long gen, long ver) {
        interest.pipeInput(conv, new im.topics.InterestRecord(conv, device, new Interest(user, gw, gen, ver, false, now)).toJson());
    }

    /** Join events for the users at seqs 1..n. */
    private void joins(String conv, String... users) {
        for (int i = 0; i < users.length; i++) events.pipeInput(conv, event(conv, i + 1, "join", users[i]));
    }

    /** The relay's event JSON. */
    private static String event(String conv, long seq, String kind, String sender) {
        boolean msg = "msg".equals(kind);
        return new im.topics.EventRecord(conv, seq, kind, "00000000-0000-0000-0000-" + String.format("%012d", seq), sender,
                msg ? sender + "-dev" : null, msg ? "cm-" + seq : null, msg ? "hello " + seq : "", T0.toEpochMilli() + seq).toJson();
    }

    /** The relay's event JSON of a bulk join of {@code users} (sender: the first). */
    private static String bulkJoin(String conv, long seq, String... users) {
        return new im.topics.EventRecord(conv, seq, "join", "00000000-0000-0000-0000-" + String.format("%012d", seq), users[0],
                null, null, "", T0.toEpochMilli() + seq, users.length, List.of(users)).toJson();
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
        Header h = r.headers().lastHeader(RouteJson.DEST_HEADER);
        assertNotNull(h, "routed record carries " + RouteJson.DEST_HEADER);
        return new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Topics the topology produced to, other than its changelogs. */
    private Set<String> outputTopics() {
        return driver.producedTopicNames().stream().filter(t -> !t.endsWith("-changelog")).collect(Collectors.toSet());
    }

    private KeyValueStore<String, String> interestStore() {
        return driver.getKeyValueStore(DeliveryTopology.INTEREST_STORE);
    }

    /** device -> gateway of the stored registrations of a conversation. */
    private Map<String, String> storedDevices(String conv) {
        Map<String, String> m = new TreeMap<>();
        try (var it = interestStore().prefixScan(PairKey.prefix(conv), new org.apache.kafka.common.serialization.StringSerializer())) {
            it.forEachRemaining(kv -> m.put(PairKey.second(kv.key), RouteJson.parse(kv.value).get("gateway").asText()));
        }
        return m;
    }
}
