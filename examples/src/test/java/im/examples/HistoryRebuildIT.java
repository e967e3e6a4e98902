package im.examples;

import im.infra.ops.Metrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.relay.CdcRelay;
import im.relay.RelayConfig;
import im.store.directory.Directory;
import im.store.send.MessageChanges;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs the data teams' example against the real thing: sends and membership changes committed
 * to PostgreSQL, published by the CDC relay, rebuilt from the topic and verified. Then the topic
 * and the table are tampered with, and every kind of difference must be reported.
 */
@ExtendWith(ImStackExtension.class)
class HistoryRebuildIT {
    private TestStack stack;
    private Settings settings;
    private TopicNames topics;

    /** What one run printed and returned. */
    private record Run(int exit, String out, String err) {
        boolean printed(String line) {
            return out.lines().anyMatch(l -> l.equals(line));
        }
    }

    /** Runs the command with this test's stack; {@code options} are option/value pairs that replace the defaults. */
    private Run run(String... options) {
        Map<String, String> args = new LinkedHashMap<>();
        args.put("--bootstrap", stack.kafkaBootstrap());
        args.put("--topic-prefix", stack.topicPrefix());
        args.put("--pg-url", stack.jdbcUrl());
        args.put("--pg-user", settings.string(ConfigKeys.PG_USER));
        args.put("--pg-password", settings.string(ConfigKeys.PG_PASSWORD));
        args.put("--timeout", "30s");
        for (int i = 0; i < options.length; i += 2) args.put(options[i], options[i + 1]);
        List<String> argv = new ArrayList<>();
        args.forEach((k, v) -> argv.addAll(List.of(k, v)));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = HistoryRebuild.commandLine().setOut(new PrintWriter(out)).setErr(new PrintWriter(err))
                .execute(argv.toArray(String[]::new));
        System.out.printf("history-rebuild %s -> exit %d%n%s%s", List.of(options), exit, out, err);
        return new Run(exit, out.toString(), err.toString());
    }

    /** The "topic: N records read, D duplicates dropped" figures of a run. */
    private static long[] readAndDropped(Run r) {
        Matcher m = Pattern.compile("(?m)^topic: (\\d+) records read, (\\d+) duplicates dropped").matcher(r.out());
        assertTrue(m.find(), r.out());
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))};
    }

    /** This test's relay settings and event topic (3 partitions). */
    private void useStack(TestStack stack) {
        this.stack = stack;
        stack.kafkaBootstrap();
        settings = stack.settings(Map.of(ConfigKeys.RELAY_SLOT.name(), "s_" + stack.database()));
        topics = TopicNames.from(settings);
        Topics.create(stack.kafkaBootstrap(), topics.conversationKeyed(), 3);
    }

    @Test
    void rebuildsEveryConversationFromTheTopicAndReportsEveryKindOfDifference(TestStack stack) throws Exception {
        useStack(stack);
        Directory dir = new Directory(stack.dataSource(), Clock.systemUTC());
        SendService sends = new SendService(stack.dataSource(), Faults.none(), Clock.systemUTC());
        for (String u : List.of("u-ana", "u-bo", "u-cy")) dir.createUser(u, u);
        DevicePrincipal ana = dir.authenticate(dir.registerDevice("u-ana", "d-ana").token());
        DevicePrincipal bo = dir.authenticate(dir.registerDevice("u-bo", "d-bo").token());
        DevicePrincipal cy = dir.authenticate(dir.registerDevice("u-cy", "d-cy").token());
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));         // seq 1, 2: joins
        dir.createConversation("c-group", "group", List.of("u-ana", "u-bo"));     // seq 1: one join of both
        dir.createConversation("c-solo", "group", List.of("u-ana"));

        long[] before;
        try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached())) {
            sends.send(ana, "c-ab", "k1", "hello");
            sends.send(bo, "c-ab", "k2", "hi \"there\" ünïcødé 👋\nsecond line");  // seq 4
            for (int i = 0; i < 3; i++) sends.send(ana, "c-group", "g" + i, "group " + i);
            dir.addMember("c-group", "u-cy");                                       // seq 5: join
            sends.send(cy, "c-group", "c1", "cy was here");
            dir.removeMember("c-group", "u-cy");                                    // seq 7: leave
            sends.send(ana, "c-group", "g3", "after cy left");
            sends.send(ana, "c-solo", "s1", "note to self");
            sends.send(ana, "c-solo", "s1", "note to self");                       // a resend: dup, no row

            // The relay publishes a few ms after commit: --max-lag waits for the rest.
            Run all = run("--max-lag", "30s");
            assertEquals(HistoryRebuild.MATCH, all.exit(), all.out() + all.err());
            assertTrue(all.printed("RESULT: MATCH: 3 conversations, 14 events, identical on the topic and in PostgreSQL"), all.out());
            before = readAndDropped(all);
            assertTrue(all.printed("conversation c-group: PostgreSQL 8 events (head 8), topic 8 events (head 8): match"), all.out());
        }
        // The relay is stopped: from here on the topic changes only by what this test produces.

        Run one = run("--conv", "c-group");
        assertEquals(HistoryRebuild.MATCH, one.exit(), one.out());
        int partition = EventTopicReader.partitionOf("c-group", 3);
        assertTrue(one.printed("topic " + topics.events() + " on " + stack.kafkaBootstrap()
                + ": 3 partitions, reading partition " + partition + " (conversation c-group)"), one.out());
        assertTrue(one.printed("RESULT: MATCH: 1 conversations, 8 events, identical on the topic and in PostgreSQL"), one.out());

        try (KafkaProducer<String, String> producer = producer();
             Connection db = stack.dataSource().getConnection()) {
            // An identical duplicate, as a relay replay makes it; built with the backfill query of
            // docs/topics.md, which yields the same JSON up to whitespace.
            producer.send(new ProducerRecord<>(topics.events(), "c-ab", backfillValue(db, "c-ab", 4))).get();
            Run dup = run();
            assertEquals(HistoryRebuild.MATCH, dup.exit(), dup.out());
            long[] after = readAndDropped(dup);
            assertEquals(before[0] + 1, after[0], dup.out());
            assertEquals(before[1] + 1, after[1], "the identical record is dropped as a duplicate");
            assertTrue(dup.out().contains(" duplicates dropped (0 conflicting), 0 malformed"), dup.out());

            // Now every kind of damage at once.
            String forged = backfillValue(db, "c-ab", 4).replace("\"body\" : \"hi", "\"body\" : \"HI");
            assertFalse(forged.equals(backfillValue(db, "c-ab", 4)), "the forged record differs");
            producer.send(new ProducerRecord<>(topics.events(), "c-ab", forged)).get();             // conflicting duplicate
            producer.send(new ProducerRecord<>(topics.events(), "c-solo", backfillValue(db, "c-solo", 2)
                    .replace("\"seq\" : 2", "\"seq\" : 5"))).get();                                    // a seq PostgreSQL lacks
            producer.send(new ProducerRecord<>(topics.events(), "c-ab", "{\"v\":1,\"conv\":\"c-ab\"")).get();  // not JSON
            try (Statement st = db.createStatement()) {
                st.executeUpdate("UPDATE events SET body = 'edited later' WHERE conv_id = 'c-group' AND seq = 2");
            }
            dir.createConversation("c-late", "direct", List.of("u-ana", "u-cy"));   // never published
        }

        Run bad = run("--max-lag", "1s");
        assertEquals(HistoryRebuild.DIFFERENT, bad.exit(), bad.out());
        assertTrue(bad.printed("RESULT: DIFFERENT: 2 missing, 1 extra, 1 mismatched, 1 conflicting duplicates, 1 malformed, 0 recalled"), bad.out());
        assertTrue(bad.printed("conversation c-late: PostgreSQL 2 events (head 2), topic 0 events: "
                + "2 missing, 0 extra, 0 mismatched, 0 conflicting duplicates"), bad.out());
        assertTrue(bad.out().lines().anyMatch(l -> l.startsWith("MISSING   c-late seq 1 (join by u-ana, mid ")
                && l.endsWith("): in PostgreSQL, not on the topic")), bad.out());
        assertTrue(bad.out().lines().anyMatch(l -> l.startsWith("EXTRA     c-solo seq 5 (msg by u-ana, mid ")
                && l.endsWith("): on the topic, not in PostgreSQL")), bad.out());
        assertTrue(bad.printed("MISMATCH  c-group seq 2: body \"group 0\" on the topic, \"edited later\" in PostgreSQL"), bad.out());
        assertTrue(bad.out().lines().anyMatch(l -> l.startsWith("CONFLICT  c-ab seq 4: the record at partition ")
                && l.endsWith(" in body (\"HI \\\"there\\\" ünïcødé 👋\\nsecond line\" vs \"hi \\\"there\\\" ünïcødé 👋\\nsecond line\")")),
                bad.out());
        assertTrue(bad.out().lines().anyMatch(l -> l.startsWith("MALFORMED partition ")
                && l.endsWith(" key \"c-ab\": not JSON: Unexpected end-of-input: expected close marker for Object")),
                bad.out());
        assertTrue(bad.printed("GAP       c-solo seq 3..4 not on the topic"), bad.out());

        // One conversation: only its own differences count.
        Run ab = run("--conv", "c-ab");
        assertEquals(HistoryRebuild.DIFFERENT, ab.exit(), ab.out());
        assertTrue(ab.printed("RESULT: DIFFERENT: 0 missing, 0 extra, 0 mismatched, 1 conflicting duplicates, 1 malformed, 0 recalled"), ab.out());
        Run solo = run("--conv", "c-late", "--max-lag", "200ms");
        assertEquals(HistoryRebuild.DIFFERENT, solo.exit(), solo.out());
        assertTrue(solo.printed("RESULT: DIFFERENT: 2 missing, 0 extra, 0 mismatched, 0 conflicting duplicates, 0 malformed, 0 recalled"), solo.out());

        // Cannot check: documented exit codes and messages.
        Run unknown = run("--conv", "c-nobody");
        assertEquals(HistoryRebuild.FAILED, unknown.exit(), unknown.out());
        assertTrue(unknown.err().contains("error: conversation c-nobody has no events in PostgreSQL and none on the topic"), unknown.err());
        Run noTopic = run("--topic-prefix", "absent.");
        assertEquals(HistoryRebuild.FAILED, noTopic.exit());
        assertTrue(noTopic.err().contains("topic absent.events does not exist on " + stack.kafkaBootstrap()), noTopic.err());
        Run noDb = run("--pg-url", stack.jdbcUrl() + "_absent");
        assertEquals(HistoryRebuild.FAILED, noDb.exit());
        assertTrue(noDb.err().startsWith("error: PostgreSQL at " + stack.jdbcUrl() + "_absent: "), noDb.err());
        Run badConv = run("--conv", "not a conv id");
        assertEquals(HistoryRebuild.USAGE, badConv.exit());
        assertTrue(badConv.err().contains("--conv: 'not a conv id' is not a conversation id"), badConv.err());
        Run badTimeout = run("--timeout", "0s");
        assertEquals(HistoryRebuild.USAGE, badTimeout.exit());
        assertTrue(badTimeout.err().contains("'0s' must be above zero"), badTimeout.err());
    }

    /**
     * An edit and a recall are on the topic with their ref, as in PostgreSQL; the recalled message and
     * its edit, emptied in PostgreSQL but not on the topic, are expected (RECALLED), not mismatches,
     * and so is a record published from the emptied row later (backfill, re-snapshot). A wrong ref is not.
     */
    @Test
    void anEditMatchesByItsRefAndARecalledBodyOnTheTopicIsReportedAsRecalledNotAsAMismatch(TestStack stack) throws Exception {
        useStack(stack);
        Directory dir = new Directory(stack.dataSource(), Clock.systemUTC());
        SendService sends = new SendService(stack.dataSource(), Faults.none(), Clock.systemUTC());
        MessageChanges changes = new MessageChanges(stack.dataSource(), Faults.none(), Clock.systemUTC(), Duration.ofHours(1), Duration.ofHours(1));
        for (String u : List.of("u-ana", "u-bo")) dir.createUser(u, u);
        DevicePrincipal ana = dir.authenticate(dir.registerDevice("u-ana", "d-ana").token());
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));         // seq 1, 2: joins
        long[] before;
        try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached())) {
            long kept = sends.send(ana, "c-ab", "k1", "kept").seq();                  // seq 3
            long secret = sends.send(ana, "c-ab", "k2", "the secret").seq();          // seq 4
            changes.edit(ana, "c-ab", "k3", kept, "kept, edited");                    // seq 5
            changes.edit(ana, "c-ab", "k4", secret, "the secret, edited");            // seq 6
            // Rows committed before the relay's slot exists reach the topic through its snapshot, as
            // they are then: wait until the relay has published these, so that it streams the recall.
            Run edited = run("--max-lag", "30s");
            assertTrue(edited.printed("RESULT: MATCH: 1 conversations, 6 events, identical on the topic and in PostgreSQL"), edited.out());
            changes.recall(ana, "c-ab", "k5", secret);                                // seq 7: empties 4 and 6

            Run r = run("--max-lag", "30s");
            assertEquals(HistoryRebuild.MATCH, r.exit(), r.out() + r.err());
            assertTrue(r.printed("conversation c-ab: PostgreSQL 7 events (head 7), topic 7 events (head 7): match (2 recalled)"), r.out());
            assertTrue(r.printed("RECALLED  c-ab seq 4 (by seq 7): body kept on the topic until retention"), r.out());
            assertTrue(r.printed("RECALLED  c-ab seq 6 (by seq 7): body kept on the topic until retention"), r.out());
            assertTrue(r.printed("RESULT: MATCH: 1 conversations, 7 events, identical on the topic and in PostgreSQL"
                    + " but for 2 recalled, whose body the topic keeps until retention"), r.out());
            before = readAndDropped(r);
        }

        try (KafkaProducer<String, String> producer = producer();
             Connection db = stack.dataSource().getConnection()) {
            // The backfill query yields the relay's records of the edit and the recall, with ref; the
            // emptied message differs from its original record only by the body the recall emptied.
            for (long seq : List.of(5L, 7L, 4L)) {
                producer.send(new ProducerRecord<>(topics.events(), "c-ab", backfillValue(db, "c-ab", seq))).get();
            }
            Run dup = run();
            assertEquals(HistoryRebuild.MATCH, dup.exit(), dup.out());
            assertEquals(before[1] + 3, readAndDropped(dup)[1], "the three records are dropped as duplicates");
            assertTrue(dup.out().contains(" duplicates dropped (0 conflicting), 0 malformed"), dup.out());

            String wrongRef = backfillValue(db, "c-ab", 5).replace("\"ref\" : 3", "\"ref\" : 4");
            assertFalse(wrongRef.equals(backfillValue(db, "c-ab", 5)), "the forged record differs");
            producer.send(new ProducerRecord<>(topics.events(), "c-ab", wrongRef)).get();
            try (Statement st = db.createStatement()) {
                st.executeUpdate("UPDATE events SET body = 'changed' WHERE conv_id = 'c-ab' AND seq = 3");
            }
        }
        Run bad = run("--max-lag", "1s");
        assertEquals(HistoryRebuild.DIFFERENT, bad.exit(), bad.out());
        assertTrue(bad.out().lines().anyMatch(l -> l.startsWith("CONFLICT  c-ab seq 5: the record at partition ")
                && l.endsWith(" in ref (4 vs 3)")), bad.out());
        assertTrue(bad.printed("MISMATCH  c-ab seq 3: body \"kept\" on the topic, \"changed\" in PostgreSQL"), bad.out());
        assertTrue(bad.printed("RESULT: DIFFERENT: 0 missing, 0 extra, 1 mismatched, 1 conflicting duplicates, 0 malformed, 2 recalled"), bad.out());
    }

    /** The value the backfill query of docs/topics.md builds for one row. */
    private static String backfillValue(Connection db, String conv, long seq) throws Exception {
        String at = " 'at', floor(extract(epoch FROM created_at) * 1000)::bigint";
        try (PreparedStatement ps = db.prepareStatement(
                "SELECT CASE WHEN users IS NOT NULL"
                + " THEN json_build_object('v', 1, 'conv', conv_id, 'seq', seq, 'kind', kind, 'mid', mid,"
                + " 'sender', sender, 'device', sender_device, 'cmid', cmid, 'body', body,"
                + at + ", 'count', users_count, 'users', users)"
                + " WHEN ref_seq IS NOT NULL"
                + " THEN json_build_object('v', 1, 'conv', conv_id, 'seq', seq, 'kind', kind, 'mid', mid,"
                + " 'sender', sender, 'device', sender_device, 'cmid', cmid, 'body', body,"
                + at + ", 'ref', ref_seq)"
                + " ELSE json_build_object('v', 1, 'conv', conv_id, 'seq', seq, 'kind', kind, 'mid', mid,"
                + " 'sender', sender, 'device', sender_device, 'cmid', cmid, 'body', body,"
                + at + ") END AS value"
                + " FROM events WHERE conv_id = ? AND seq = ?")) {
            ps.setString(1, conv);
            ps.setLong(2, seq);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), conv + " seq " + seq);
                return rs.getString(1);
            }
        }
    }

    private KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }
}
