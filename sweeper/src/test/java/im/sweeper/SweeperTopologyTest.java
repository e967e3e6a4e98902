package im.sweeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.kafka.TopicNames;
import im.streams.ConvLogStore;
import im.topics.PairKey;
import im.topics.Period;
import im.topics.RouteJson;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SweeperTopology} under {@link TopologyTestDriver} with a mocked wall clock that moves only
 * through {@link #advance}: lag detected after the sweep interval and not before, catch-up, offline
 * and never-online devices, back-off, duplicate / out-of-order / reinstall cursor records, routing
 * to the pair's gateway only, dead gateways, and a tick's cost following the lagging pairs.
 * Brief §2 D5, §5 item 6 and "Routing"; issue 4.
 */
class SweeperTopologyTest {
    private static final TopicNames TOPICS = new TopicNames("t.");
    private static final Duration SWEEP = Duration.ofMillis(1000);
    private static final Duration BACKOFF = Duration.ofMillis(2000);
    private static final Duration LEASE = Duration.ofSeconds(10);
    /** Renewal interval; the tests renew nothing, so a long one keeps every registration within its lease. */
    private static final Duration RENEW = Duration.ofHours(1);
    private static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");
    private static final long GEN = 1;

    @TempDir
    Path stateDir;

    private TopologyTestDriver driver;
    private final LongAdder hintCount = new LongAdder();
    private final SweepStats stats = new SweepStats(hintCount);
    private TestInputTopic<String, String> events;
    private TestInputTopic<String, String> cursors;
    private TestInputTopic<String, String> interest;
    private TestInputTopic<String, String> gateways;
    private TestOutputTopic<String, String> gwA;
    private TestOutputTopic<String, String> gwB;
    /** The driver's wall clock. Punctuations fire at T0 + k × sweep. */
    private long now;

    private void start(Duration sweep, Duration backoff) {
        start(sweep, backoff, Duration.ZERO);
    }

    private void start(Duration sweep, Duration backoff, Duration ackThrottle) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "sweeper-topology-test");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        driver = new TopologyTestDriver(SweeperTopology.build(TOPICS, sweep, backoff, LEASE, RENEW, ackThrottle, stats), p, T0);
        now = T0.toEpochMilli();
        StringSerializer ser = new StringSerializer();
        StringDeserializer de = new StringDeserializer();
        events = driver.createInputTopic(TOPICS.events(), ser, ser);
        cursors = driver.createInputTopic(TOPICS.cursors(), ser, ser);
        interest = driver.createInputTopic(TOPICS.interest(), ser, ser);
        gateways = driver.createInputTopic(TOPICS.gateways(), ser, ser);
        gwA = driver.createOutputTopic(TOPICS.channel("gw-a"), de, de);
        gwB = driver.createOutputTopic(TOPICS.channel("gw-b"), de, de);
    }

    private void start() {
        start(SWEEP, BACKOFF);
    }

    @AfterEach
    void tearDown() {
        if (driver != null) driver.close();
    }

    // ---------------------------------------------------------------- detection

    @Test
    void lagIsHintedOnceItLastedTheSweepIntervalAndNotBefore() {
        start();
        online("c1", "d1", "gw-a");
        cursor("c1", "d1", 1, 4);
        events("c1", 1, 4);
        advance(300);
        events("c1", 5, 5);                       // the push of 5 is lost: lagging since T0+300

        advance(700);                             // tick at T0+1000: lagging for 700 ms only
        assertTrue(gwA.isEmpty(), "no hint before the interval");
        advance(299);                             // T0+1299: no tick in between
        assertTrue(gwA.isEmpty());

        advance(701);                             // tick at T0+2000: lagging for 1700 ms
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "one hint: " + hints);
        assertHint(hints.get(0), "c1", 5, "d1");
        assertEquals(T0.toEpochMilli() + 2000, hints.get(0).timestamp(), "stamped with the punctuation's wall clock");
        assertEquals(1, hintCount.sum());
    }

    @Test
    void lagStartingAtATickIsHintedExactlyOneIntervalLater() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 3);                       // never acked: cursor 0, lagging since T0

        advance(SWEEP.toMillis() - 1);
        assertTrue(gwA.isEmpty(), "sweep - 1 ms: no hint");
        advance(1);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 3, "d1");
    }

    @Test
    void catchUpClearsTheLagAndStopsTheHints() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        advance(1000);
        assertEquals(1, gwA.readRecordsToList().size(), "lagging: hinted");

        cursor("c1", "d1", 1, 5);                 // the device synced and acked to the head
        assertEquals(0, count(lagging()), "no longer lagging");
        advanceInSteps(10_000, 100);
        assertTrue(gwA.isEmpty(), "no hint after the catch-up");
        assertEquals(1, hintCount.sum());
    }

    @Test
    void aHintedPairThatCatchesUpIsOneRepairAndLaggingPairsAreCountedByAge() {
        start();
        online("c1", "d1", "gw-a");
        online("c1", "d2", "gw-a");
        online("c2", "d3", "gw-a");
        events("c1", 1, 5);                       // d1 and d2 lag from T0
        events("c2", 1, 2);
        cursor("c2", "d3", 1, 2);                 // d3 catches up before any hint: not a repair
        advance(1000);
        assertEquals(2, hintCount.sum(), "d1 and d2 hinted");
        assertEquals(0, stats.laggingOver(0), "lagging for 1 s only");

        cursor("c1", "d1", 1, 5);                 // d1 synced after its hint: a repair
        cursor("c1", "d2", 1, 3);                 // d2 moved, but is still behind: not yet; its spell restarts
        assertEquals(1, stats.repairs());
        advanceInSteps(8000, 1000);               // T0+9 s: d2 has missed seq 4 and 5 for 9 s
        assertEquals(0, stats.laggingOver(0), "a spell's age counts from the arrival of the first seq above the cursor");
        advance(1000);                            // T0+10 s: 10 s
        assertEquals(1, stats.laggingOver(0), "over " + SweepStats.AGES.get(0));
        assertEquals(0, stats.laggingOver(1), "not over " + SweepStats.AGES.get(1));

        cursor("c1", "d2", 1, 5);
        assertEquals(2, stats.repairs());
        advance(1000);
        assertEquals(0, stats.laggingOver(0), "counted as of the last sweep");
    }

    @Test
    void catchUpWithinTheIntervalMeansNoHintAtAll() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        advance(400);
        cursor("c1", "d1", 1, 5);                 // the push arrived and was acked in time
        advanceInSteps(10_000, 100);
        assertTrue(gwA.isEmpty());
    }

    @Test
    void aNewEventAfterCatchUpMakesThePairLagAgain() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        cursor("c1", "d1", 1, 5);
        advanceInSteps(3000, 100);
        assertTrue(gwA.isEmpty(), "caught up: nothing to hint");

        events("c1", 6, 6);                       // its push is lost
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 6, "d1");
    }

    /**
     * A busy conversation (10 events/s) and a device that keeps up: its acks are written at most
     * every 400 ms and each covers all but the event that arrived meanwhile, so its cursor is never
     * equal to the head. It holds everything it could see 400 ms ago, and is never hinted.
     */
    @Test
    void aDeviceThatKeepsUpWithABusyConversationIsNeverHinted() {
        start();
        online("c1", "d1", "gw-a");
        long seq = 0;
        for (int step = 1; step <= 200; step++) {   // 20 s
            events("c1", ++seq, seq);
            advance(100);
            if (step % 4 == 0) cursor("c1", "d1", 1, seq - 1);
        }
        assertTrue(gwA.isEmpty(), "hints to a device that keeps up: " + gwA.readRecordsToList());
        assertEquals(0, hintCount.sum());
    }

    /** The same conversation, and the device's cursor stops moving (its pushes are lost): hinted one sweep later. */
    @Test
    void aDeviceThatStopsKeepingUpWithABusyConversationIsHintedWithinTheSweep() {
        start();
        online("c1", "d1", "gw-a");
        long seq = 0;
        long stoppedAt = -1;
        TestRecord<String, String> hint = null;
        for (int step = 1; step <= 100 && hint == null; step++) {
            events("c1", ++seq, seq);
            advance(100);
            if (step <= 40 && step % 4 == 0) cursor("c1", "d1", 1, seq - 1);
            if (step == 40) stoppedAt = now;   // its last ack: it holds everything up to seq 39
            if (!gwA.isEmpty()) hint = gwA.readRecord();
        }
        assertNotNull(hint, "never hinted");
        long after = hint.timestamp() - stoppedAt;
        assertTrue(after <= SWEEP.toMillis() + 400 + 100, "hinted " + after + " ms after its cursor stopped");
        assertTrue(RouteJson.parse(hint.value()).get("hint").get("head").asLong() > 40, "with the head at the time: " + hint.value());
    }

    /**
     * A device's cursor is written at most every ack-throttle interval, so its record can reach the
     * sweeper that much after the device acked: a spell is due only sweep + throttle after it began.
     */
    @Test
    void aCursorRecordDelayedByTheAckThrottleIsNotTakenForALostPush() {
        start(SWEEP, BACKOFF, Duration.ofMillis(400));
        online("c1", "d1", "gw-a");
        events("c1", 1, 1);
        advanceInSteps(1300, 100);                // past the sweep, within sweep + throttle
        cursor("c1", "d1", 1, 1);                 // the throttled record arrives
        advanceInSteps(5000, 100);
        assertTrue(gwA.isEmpty(), "no hint: " + gwA.readRecordsToList());

        events("c1", 2, 2);                       // this push is lost: the cursor never comes
        advanceInSteps(1300, 100);
        assertTrue(gwA.isEmpty(), "not before sweep + throttle");
        advanceInSteps(1000, 100);
        assertHint(gwA.readRecord(), "c1", 2, "d1");
    }

    // ---------------------------------------------------------------- who is hinted

    @Test
    void aDeviceThatGoesOfflineBeforeTheIntervalIsNeverHinted() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        advance(500);
        offline("c1", "d1", "gw-a", GEN);
        assertFalse(RouteJson.parse(online().get(PairKey.of("c1", "d1"))).get("online").asBoolean(),
                "the withdrawal is kept (a late registration of that connection cannot come back)");
        assertNull(lagging().get(PairKey.of("c1", "d1")));
        advanceInSteps(10_000, 100);
        assertTrue(gwA.isEmpty());
        assertEquals(0, hintCount.sum());
    }

    @Test
    void aNeverOnlineDeviceWithALaggingCursorIsNeverHinted() {
        start();
        events("c1", 1, 5);
        cursor("c1", "d2", 1, 1);                 // acked once, is not connected anywhere
        assertEquals(0, count(lagging()));
        advanceInSteps(10_000, 100);
        assertEquals(Set.of(), outputTopics());
    }

    @Test
    void aStaleWithdrawalDoesNotRemoveANewerRegistration() {
        start();
        online("c1", "d1", "gw-a", 1);
        online("c1", "d1", "gw-b", 7);            // the device reconnected at gw-b
        offline("c1", "d1", "gw-a", 1);           // gw-a's withdrawal arrives late: must not remove gw-b's
        offline("c1", "d1", "gw-b", 6);           // an older generation of gw-b: neither
        events("c1", 1, 2);
        advance(1000);
        assertTrue(gwA.isEmpty(), "nothing to the old gateway");
        List<TestRecord<String, String>> hints = gwB.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 2, "d1");
    }

    @Test
    void theHintGoesOnlyToThePairsGatewayOneRecordPerConversationAndGateway() {
        start();
        online("c1", "d1", "gw-a");
        online("c1", "d2", "gw-a");
        online("c1", "d3", "gw-b");
        online("c2", "d4", "gw-b");
        events("c1", 1, 4);
        events("c2", 1, 9);
        cursor("c1", "d3", 1, 4);                 // d3 is up to date
        cursor("c2", "d4", 1, 9);                 // so is d4
        advance(1000);

        List<TestRecord<String, String>> a = gwA.readRecordsToList();
        assertEquals(1, a.size(), "d1 and d2 of c1 on gw-a share one record: " + a);
        assertHint(a.get(0), "c1", 4, "d1", "d2");
        assertEquals(TOPICS.channel("gw-a"), destHeader(a.get(0)));
        assertTrue(gwB.isEmpty(), "gw-b's devices are not lagging");
        assertEquals(Set.of(TOPICS.channel("gw-a")), outputTopics());
        assertEquals(2, hintCount.sum(), "two device hints");
    }

    @Test
    void pairsOfASilentGatewayAreNotHintedUntilItHeartbeatsAgain() {
        start();
        heartbeat("gw-a", GEN, now - LEASE.toMillis() - 1);   // silent for longer than the lease
        heartbeat("gw-b", GEN, now);                          // alive: the control
        online("c1", "d1", "gw-a");
        online("c1", "d2", "gw-b");
        events("c1", 1, 3);
        advance(1000);

        assertTrue(gwA.isEmpty(), "no hint to a silent gateway");
        assertEquals(1, gwB.readRecordsToList().size());
        assertNotNull(lagging().get(PairKey.of("c1", "d1")), "the silent gateway's pair is kept, still lagging");
        advanceInSteps(3_000, 500);
        assertTrue(gwA.isEmpty());
        // The gateway was frozen, not dead: it heartbeats again and its device is hinted without reconnecting.
        heartbeat("gw-a", GEN, now);
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "hinted once the gateway is back: " + hints);
        assertHint(hints.get(0), "c1", 3, "d1");
    }

    @Test
    void pairsOfAGatewayThatRestartedWithANewerGenerationAreDropped() {
        start();
        heartbeat("gw-a", GEN + 1, now);          // gw-a restarted: registrations of GEN are gone
        online("c1", "d1", "gw-a", GEN);
        events("c1", 1, 3);
        advanceInSteps(5000, 100);
        assertTrue(gwA.isEmpty());
        assertEquals(0, count(online()));
    }

    @Test
    void aLeavingMemberIsHintedUpToItsLeaveAndNeverBeyond() {
        start();
        online("c1", "d1", "gw-a", "u1", GEN);
        online("c1", "d2", "gw-a", "u2", GEN);
        events("c1", 1, 2);
        events.pipeInput("c1", event("c1", 3, "leave", "u1"));
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 3, "d1", "d2");   // the leaver still has to catch up on its leave
        cursor("c1", "d1", 1, 3);
        cursor("c1", "d2", 1, 3);
        events("c1", 4, 4);
        assertOnlyHintAfterASweep("c1", 4, "d2");
        assertNull(lagging().get(PairKey.of("c1", "d1")), "at its leave the former member is not behind");
    }

    /** A bulk join opens every listed user's period at its seq; its replay never reopens a period a later leave closed. */
    @Test
    void aBulkJoinMakesEveryListedUsersDevicesHintableAndItsReplayChangesNoLaterLeave() {
        start();
        for (String d : List.of("d1", "d2")) {   // registered, not members yet
            interest.pipeInput("c1", new im.topics.InterestRecord("c1", d, new im.topics.Interest("u-" + d, "gw-a", GEN, 1, true, now)).toJson());
        }
        String bulk = new im.topics.EventRecord("c1", 1, "join", "m-c1-1", "u-d1", null, null, "", 0, 3,
                List.of("u-d1", "u-d2", "u-d3")).toJson();
        events.pipeInput("c1", bulk);
        events("c1", 2, 3);
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "both added members' devices lag: " + hints);
        assertHint(hints.get(0), "c1", 3, "d1", "d2");

        events.pipeInput("c1", event("c1", 4, "leave", "u-d2"));
        cursor("c1", "d1", 1, 4);
        cursor("c1", "d2", 1, 4);
        events.pipeInput("c1", bulk);   // a CDC replay of the bulk join
        events("c1", 5, 5);
        assertOnlyHintAfterASweep("c1", 5, "d1");
        assertNull(lagging().get(PairKey.of("c1", "d2")), "u-d2 left at 4; the replayed join at 1 does not reopen its period");
    }

    @Test
    void aNeverMemberIsNeverHintedWhateverItsRegistrationSays() {
        start();
        online("c1", "d2", "gw-a", "u2", GEN);
        interest.pipeInput("c1", new im.topics.InterestRecord("c1", "d9", new im.topics.Interest("u9", "gw-a", GEN, 99, true, now)).toJson());
        events("c1", 1, 3);
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 3, "d2");
    }

    /**
     * A crash can leave the log store holding the head's write of a join whose period's write was
     * lost: the replayed join restores the period, and its conversation's pairs are checked at the
     * next tick, though its head did not move.
     */
    @Test
    void aReplayedJoinRestoresALostPeriodAndItsConversationIsCheckedAtTheNextTick() {
        start();
        interest.pipeInput("c1", new im.topics.InterestRecord("c1", "d1", new im.topics.Interest("u-d1", "gw-a", GEN, 1, true, now)).toJson());
        events.pipeInput("c1", event("c1", 1, "join", "u-d1"));
        events("c1", 2, 3);
        driver.<String, String>getKeyValueStore(ConvLogStore.PERIODS).delete(PairKey.of("c1", "u-d1"));   // the write the crash lost
        advanceInSteps(3000, 1000);
        assertTrue(gwA.isEmpty(), "not a member, as far as the store knows");
        events.pipeInput("c1", event("c1", 1, "join", "u-d1"));   // the relay or Streams replays the join
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "" + hints);
        assertHint(hints.get(0), "c1", 3, "d1");
    }

    /**
     * A task that starts (after a crash, or moved here by a rebalance) finds its state restored
     * from the changelogs but does not know when its heads arrived: it takes them as arrived at
     * its start, and one due interval later hints the pairs that are behind, once each.
     */
    @Test
    void aStartingTaskHintsThePairsBehindItsRestoredHeadsOneIntervalAfterItStarted() {
        start();
        // As restored from the changelogs: head 3, d1 online with cursor 1, d2 online and up to date.
        driver.<String, Long>getKeyValueStore(ConvLogStore.HEADS).put("c1", 3L);
        for (String d : List.of("d1", "d2")) {
            member("c1", "u-" + d);
            online().put(PairKey.of("c1", d), new im.topics.Interest("u-" + d, "gw-a", GEN, 1, true, now).toStoreJson());
        }
        cursors().put(PairKey.of("c1", "d1"), "{\"epoch\":1,\"delivered\":1}");
        cursors().put(PairKey.of("c1", "d2"), "{\"epoch\":1,\"delivered\":3}");
        advance(999);
        assertTrue(gwA.isEmpty());
        advance(1);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "" + hints);
        assertHint(hints.get(0), "c1", 3, "d1");
        assertEquals(2, stats.pairsVisited(), "the first pass visits every online pair once");
        advanceInSteps(1500, 500);
        assertTrue(gwA.isEmpty(), "hinted again only after the back-off");
        assertEquals(2, stats.pairsVisited(), "and nothing is visited again while no head moves");
    }

    // ---------------------------------------------------------------- back-off

    @Test
    void aDeviceThatKeepsLaggingIsHintedWithABackOffThatDoublesWithinTheSpell() {
        Duration backoff = Duration.ofMillis(2000);
        start(Duration.ofMillis(500), backoff);
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);                       // never acks: a broken client (or every hint is lost)
        advanceInSteps(100_000, 100);

        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        // Hints at 0.5, 2.5, 6.5, 14.5, 30.5, 62.5, 94.5 s: the back-off doubles up to 16 x 2 s, then stays.
        // Without a back-off a tick every 500 ms would give 200; with a fixed one, 50.
        assertEquals(7, hints.size(), "hints over 100 s");
        long[] expectedGaps = {2000, 4000, 8000, 16_000, 32_000, 32_000};
        for (int i = 1; i < hints.size(); i++) {
            long gap = hints.get(i).timestamp() - hints.get(i - 1).timestamp();
            assertEquals(expectedGaps[i - 1], gap, "gap before hint " + i);
        }
    }

    /** A spell that ends (the device reached its mark) and a new one begin the back-off afresh. */
    @Test
    void aNewSpellStartsTheBackOffAfresh() {
        Duration backoff = Duration.ofMillis(2000);
        start(Duration.ofMillis(500), backoff);
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        advanceInSteps(10_000, 100);              // hinted at 0.5, 2.5 and 6.5 s
        assertEquals(3, gwA.readRecordsToList().size());
        cursor("c1", "d1", 1, 5);                 // it synced
        events("c1", 6, 6);                       // and loses the next push
        advanceInSteps(3_000, 100);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(2, hints.size(), "the new spell is hinted after the sweep and again after the plain back-off");
        assertHint(hints.get(0), "c1", 6, "d1");
        assertEquals(backoff.toMillis(), hints.get(1).timestamp() - hints.get(0).timestamp(), "not the spell before's 8 s");
    }

    // ---------------------------------------------------------------- cursor records

    @Test
    void duplicateAndOutOfOrderCursorRecordsNeverMoveTheCursorBack() {
        start();
        online("c1", "d1", "gw-a");
        for (long seq : new long[] {1, 2, 3, 4, 5, 6, 7, 5, 6, 7}) events("c1", seq, seq);   // with a CDC replay
        cursor("c1", "d1", 1, 7);
        cursor("c1", "d1", 1, 3);                 // late: must not move it back
        assertEquals(7, storedCursor("c1", "d1").get("delivered").asLong());
        assertEquals(0, count(lagging()), "a late smaller cursor does not make it lag");
        cursor("c1", "d1", 1, 7);                 // duplicate
        cursor("c1", "d1", 0, 2);                 // a stale record of an older install
        assertEquals(7, storedCursor("c1", "d1").get("delivered").asLong());
        assertEquals(7L, driver.<String, Long>getKeyValueStore(ConvLogStore.HEADS).get("c1"));
        assertEquals(0, count(lagging()), "cursor 7 = head 7: not lagging");
        advanceInSteps(5000, 100);
        assertTrue(gwA.isEmpty());
    }

    @Test
    void aReinstalledDeviceStartsFromZeroAndLagsAgain() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        cursor("c1", "d1", 1, 5);
        assertEquals(0, count(lagging()));

        cursors.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\",\"device\":\"d1\",\"deleted\":true}");
        assertNull(cursors().get(PairKey.of("c1", "d1")), "cursor back to 0");
        assertNotNull(fresh().get(PairKey.of("c1", "d1")), "and behind, since it is online: due one interval later");
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size());
        assertHint(hints.get(0), "c1", 5, "d1");

        cursor("c1", "d1", 2, 2);                 // the new install acks from scratch: lower, yet it replaces
        assertEquals(2, storedCursor("c1", "d1").get("epoch").asLong());
        assertEquals(2, storedCursor("c1", "d1").get("delivered").asLong());
        cursor("c1", "d1", 1, 5);                 // a stray record of the old install changes nothing
        assertEquals(2, storedCursor("c1", "d1").get("delivered").asLong());
        assertNotNull(lagging().get(PairKey.of("c1", "d1")));

        cursor("c1", "d1", 2, 5);
        assertEquals(0, count(lagging()));
    }

    /**
     * The reset of a reinstall comes from the CDC relay, the new install's cursors from the cursor
     * service: the first may arrive after the second, and a late record of the old install after both.
     */
    @Test
    void aResetArrivingAfterTheNewInstallsCursorKeepsItAndOldInstallRecordsStayOut() {
        start();
        online("c1", "d1", "gw-a");
        events("c1", 1, 5);
        cursor("c1", "d1", 1, 5);
        cursor("c1", "d1", 2, 3);                 // the new install's first cursor, before the reset
        reset("c1", "d1", 2);
        assertEquals(2, storedCursor("c1", "d1").get("epoch").asLong(), "the new install's cursor stays");
        assertEquals(3, storedCursor("c1", "d1").get("delivered").asLong());

        online("c2", "d1", "gw-a");
        events("c2", 1, 4);
        cursor("c2", "d1", 1, 4);
        reset("c2", "d1", 2);                     // in order: the old install's cursor is gone
        assertEquals(0, storedCursor("c2", "d1").get("delivered").asLong());
        cursor("c2", "d1", 1, 4);                 // a late record of the old install does not bring it back
        assertEquals(0, storedCursor("c2", "d1").get("delivered").asLong());
        assertNotNull(fresh().get(PairKey.of("c2", "d1")), "behind: the new install holds nothing yet");
    }

    // ---------------------------------------------------------------- cost

    /** A large task's first pass is spread over ticks, and the pairs behind in each part are hinted once. */
    @Test
    void aStartingTasksFirstPassIsSpreadOverTicks() {
        start();
        int n = SweeperTopology.FIRST_PASS_PAIRS_PER_TICK + 5_000;
        KeyValueStore<String, Long> heads = driver.getKeyValueStore(ConvLogStore.HEADS);
        KeyValueStore<String, String> periods = driver.getKeyValueStore(ConvLogStore.PERIODS);
        for (int i = 0; i < n; i++) {   // as restored: one device per conversation, cursor 0, head 1
            String conv = String.format("c%06d", i);
            heads.put(conv, 1L);
            periods.put(PairKey.of(conv, "u"), new Period(0, Period.OPEN).encode());
            online().put(PairKey.of(conv, "d"), new im.topics.Interest("u", "gw-a", GEN, 1, true, now).toStoreJson());
        }
        advance(1000);
        assertEquals(SweeperTopology.FIRST_PASS_PAIRS_PER_TICK, stats.pairsVisited(), "the first tick's part");
        assertEquals(SweeperTopology.FIRST_PASS_PAIRS_PER_TICK, hintCount.sum());
        advance(1000);
        assertEquals(n, stats.pairsVisited(), "the rest at the next tick");
        assertEquals(n, hintCount.sum(), "every pair hinted once, none twice");
        advance(1000);
        assertEquals(n, stats.pairsVisited(), "and then nothing");
        assertEquals(n, count(lagging()), "all hinted, waiting for their back-off");
    }

    /**
     * An event costs no pair: the tick after it is due visits the online pairs of that
     * conversation once (however many events it had), the lagging index, and nothing else.
     */
    @Test
    void aTickWorksOnTheLaggingPairsAndTheConversationsWhoseHeadMovedNotOnEveryOnlinePair() {
        start();
        heartbeat("gw-a", GEN, now);
        for (int c = 0; c < 100; c++) {
            String conv = "c" + c;
            events(conv, 1, 5);
            for (int d = 0; d < 10; d++) {
                String device = "d" + d;
                boolean lags = (c == 3 && d == 4) || (c == 77 && d == 1);
                cursor(conv, device, 1, lags ? 2 : 5);
                online(conv, device, "gw-a");
            }
        }
        assertEquals(1000, count(online()), "1000 online pairs");
        assertEquals(2, count(fresh()), "the 2 pairs that registered behind wait for their interval");
        assertEquals(0, count(lagging()), "nothing is hinted yet");

        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(2, hints.size(), "one tick, two hints: " + hints);
        assertHint(hints.get(0), "c3", 5, "d4");
        assertHint(hints.get(1), "c77", 5, "d1");
        assertEquals(2, hintCount.sum());
        assertEquals(1000, stats.pairsVisited(), "the task's first pass");

        cursor("c3", "d4", 1, 5);
        events("c3", 6, 15);                      // 10 events, d0..d9 all miss them
        advance(1000);
        hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "" + hints);
        assertHint(hints.get(0), "c3", 15, "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9");
        assertEquals(1010, stats.pairsVisited(), "c3's 10 pairs once, not 10 × 10");
        advanceInSteps(1000, 500);
        assertEquals(1010, stats.pairsVisited(), "no head moved: nothing visited");
    }

    /**
     * A connect burst (devices register behind the head, then sync and ack within the interval)
     * writes nothing to the lagging index: no entry, no tombstone, no changelog record. Before, each
     * registration wrote an entry or a delete, and each ack another: tombstones that every tick's
     * walk of the index then stepped over (the idle sweeper's cost after a burst).
     */
    @Test
    void aConnectBurstThatCatchesUpWithinTheIntervalLeavesNothingInTheIndex() {
        start();
        heartbeat("gw-a", GEN, now);
        for (int c = 0; c < 50; c++) events("c" + c, 1, 3);
        advanceInSteps(2000, 1000);
        TestOutputTopic<String, String> changelog = driver.createOutputTopic(
                "sweeper-topology-test-" + SweeperTopology.LAGGING_STORE + "-changelog", new StringDeserializer(), new StringDeserializer());
        for (int c = 0; c < 50; c++) {
            for (int d = 0; d < 4; d++) online("c" + c, "d" + d, "gw-a");
        }
        advance(300);
        for (int c = 0; c < 50; c++) {
            for (int d = 0; d < 4; d++) cursor("c" + c, "d" + d, 1, 3);
        }
        advanceInSteps(3000, 500);
        assertTrue(gwA.isEmpty(), "no hint: they caught up");
        assertEquals(0, changelog.readRecordsToList().size(), "no write to the index: no entry, no delete");
        assertEquals(0, count(fresh()));
    }

    @Test
    void malformedRecordsAreIgnored() {
        start();
        events.pipeInput("c1", "not json");
        events.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\"}");
        cursors.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\",\"device\":\"d1\"}");
        cursors.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\",\"device\":\"d1\",\"epoch\":1,\"delivered\":\"4\",\"at\":0}");
        interest.pipeInput("c1", "{\"v\":1,\"conv\":\"c1\",\"online\":true}");
        gateways.pipeInput("gw-a", "{}");
        events.pipeInput("c1", (String) null);
        online("c1", "d1", "gw-a");
        events("c1", 1, 1);
        advance(1000);
        assertEquals(1, gwA.readRecordsToList().size(), "still works after the junk");
    }

    /**
     * The sweeper keeps its registrations true by the gateways' digests, as the delivery nodes do:
     * a pair whose withdrawal was lost is withdrawn (and leaves the lagging index) when the
     * re-send it asked for ends without it; one whose registration was lost is hinted after it.
     */
    @Test
    void aResendAskedForByTwoDigestsWithdrawsWhatTheGatewayNoLongerHoldsAndRegistersWhatWasLost() {
        start();
        heartbeat("gw-a", GEN, now);
        online("c1", "d1", "gw-a");               // its withdrawal will be lost
        events("c1", 1, 3);                       // d1 lags, and would be hinted but for what follows
        long v2 = versions.size() + 1L;            // d2's registration: lost on its way
        versions.put("c1/d2/gw-a/" + GEN, v2);
        member("c1", "u-d2");
        long term = im.topics.InterestDigest.term("c1", "d2", v2);
        for (int i = 0; i < 2; i++) {
            interest.pipeInput("gw-a", new im.topics.InterestDigest("gw-a", GEN, 0, 1, term, now).toJson());
        }
        List<TestRecord<String, String>> asked = gwA.readRecordsToList();
        assertEquals(1, asked.size(), "two disagreeing digests: one request");
        assertEquals(new im.topics.ChannelRecord.Resync(0, GEN), im.topics.ChannelRecord.read(asked.get(0).value()));
        advance(10);
        long since = now;
        interest.pipeInput("c1", new im.topics.InterestRecord("c1", "d2",
                new im.topics.Interest("u-d2", "gw-a", GEN, v2, true, now)).toJson());   // the re-send
        interest.pipeInput("gw-a", new im.topics.InterestDigest("gw-a", GEN, 0, 1, term, since, now).toJson());
        assertFalse(online().get(PairKey.of("c1", "d1")).contains("\"online\":true"), "d1 withdrawn: " + online().get(PairKey.of("c1", "d1")));
        events("c1", 4, 4);
        advance(1000);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "" + hints);
        assertHint(hints.get(0), "c1", 4, "d2");
    }

    // ---------------------------------------------------------------- helpers

    /** Sweeps (1 s in two steps) and expects one hint on gw-a: of {@code head}, to {@code devices} only. */
    private void assertOnlyHintAfterASweep(String conv, long head, String... devices) {
        advanceInSteps(1000, 500);
        List<TestRecord<String, String>> hints = gwA.readRecordsToList();
        assertEquals(1, hints.size(), "only " + List.of(devices) + " hinted of " + head + ": " + hints);
        assertHint(hints.get(0), conv, head, devices);
    }

    private void advance(long ms) {
        now += ms;
        driver.advanceWallClockTime(Duration.ofMillis(ms));
    }

    private void advanceInSteps(long total, long step) {
        for (long t = 0; t < total; t += step) advance(step);
    }

    private void online(String conv, String device, String gateway) {
        online(conv, device, gateway, GEN);
    }

    private void online(String conv, String device, String gateway, long gen) {
        online(conv, device, gateway, "u-" + device, gen);
    }

    /** Connection versions per (conv, device, gateway, gen): one connection per registration site. */
    private final java.util.Map<String, Long> versions = new java.util.HashMap<>();

    /**
     * Registers the device (one connection per gateway and generation) and makes its user a member
     * of the conversation from seq 0 on, written straight into the log store, so the tests' event
     * seqs stay as they are (membership itself is tested with real join/leave events).
     */
    private void online(String conv, String device, String gateway, String user, long gen) {
        member(conv, user);
        long ver = versions.computeIfAbsent(conv + "/" + device + "/" + gateway + "/" + gen, k -> (long) versions.size() + 1);
        interest.pipeInput(conv, new im.topics.InterestRecord(conv, device, new im.topics.Interest(user, gateway, gen, ver, true, now)).toJson());
    }

    private void offline(String conv, String device, String gateway, long gen) {
        long ver = versions.getOrDefault(conv + "/" + device + "/" + gateway + "/" + gen, 0L);
        interest.pipeInput(conv, new im.topics.InterestRecord(conv, device, new im.topics.Interest("u-" + device, gateway, gen, ver, false, now)).toJson());
    }

    private void member(String conv, String user) {
        KeyValueStore<String, String> periods = driver.getKeyValueStore(ConvLogStore.PERIODS);
        periods.putIfAbsent(PairKey.of(conv, user), new Period(0, Period.OPEN).encode());
    }

    private void heartbeat(String gateway, long gen, long at) {
        gateways.pipeInput(gateway, new im.topics.Heartbeat(gateway, gen, at).toJson());
    }

    /** Events from..to of a conversation, in order. */
    private void events(String conv, long from, long to) {
        for (long seq = from; seq <= to; seq++) events.pipeInput(conv, event(conv, seq, "msg", "u-x"));
    }

    private static String event(String conv, long seq, String kind, String sender) {
        boolean msg = "msg".equals(kind);
        return new im.topics.EventRecord(conv, seq, kind, "m-" + conv + "-" + seq, sender, msg ? "dx" : null,
                msg ? "x" + seq : null, msg ? "b" : "", 0).toJson();
    }

    private void cursor(String conv, String device, long epoch, long delivered) {
        cursors.pipeInput(conv, new im.topics.CursorRecord.Update(conv, device, (int) epoch, delivered, now).toJson());
    }

    private void reset(String conv, String device, int epoch) {
        cursors.pipeInput(conv, new im.topics.CursorRecord.Deleted(conv, device, epoch).toJson());
    }

    private KeyValueStore<String, String> lagging() {
        return driver.getKeyValueStore(SweeperTopology.LAGGING_STORE);
    }

    private KeyValueStore<String, String> online() {
        return driver.getKeyValueStore(SweeperTopology.ONLINE_STORE);
    }

    private KeyValueStore<String, String> cursors() {
        return driver.getKeyValueStore(SweeperTopology.CURSORS_STORE);
    }

    private JsonNode storedCursor(String conv, String device) {
        return RouteJson.parse(cursors().get(PairKey.of(conv, device)));
    }

    private KeyValueStore<String, Long> fresh() {
        return driver.getKeyValueStore(SweeperTopology.FRESH_STORE);
    }

    private static <V> long count(KeyValueStore<String, V> store) {
        List<KeyValue<String, V>> all = new ArrayList<>();
        try (KeyValueIterator<String, V> it = store.all()) {
            it.forEachRemaining(all::add);
        }
        return all.size();
    }

    private static void assertHint(TestRecord<String, String> r, String conv, long head, String... devices) {
        JsonNode v = RouteJson.parse(r.value());
        assertEquals(conv, r.key());
        assertEquals(1, v.get("v").asInt());
        assertEquals(new TreeSet<>(List.of(devices)), devicesOf(v));
        JsonNode h = v.get("hint");
        assertNotNull(h, "a hint record: " + r.value());
        assertEquals(conv, h.get("conv").asText());
        assertEquals(head, h.get("head").asLong());
        assertEquals("sweep", h.get("why").asText());
        assertTrue(!v.has("ev"), "a hint carries no event");
    }

    private static Set<String> devicesOf(JsonNode v) {
        Set<String> s = new TreeSet<>();
        v.get("devices").forEach(d -> s.add(d.asText()));
        return s;
    }

    private static String destHeader(TestRecord<String, String> r) {
        Header h = r.headers().lastHeader(RouteJson.DEST_HEADER);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private Set<String> outputTopics() {
        return driver.producedTopicNames().stream().filter(t -> !t.endsWith("-changelog")).collect(Collectors.toSet());
    }
}
