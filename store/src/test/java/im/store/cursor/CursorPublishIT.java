package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.db.DatabaseUnavailableException;
import im.infra.identity.DevicePrincipal;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.infra.ops.Metrics;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.CursorRecord;
import io.micrometer.core.instrument.Tags;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The cursor service publishes each cursor change itself (cursor rows are not in the CDC relay's
 * publication): on the topic before the transaction commits, nothing for an ack that moves nothing,
 * and no change committed without its record.
 */
@ExtendWith(ImStackExtension.class)
class CursorPublishIT {
    private TestStack stack;
    private DataSource db;
    private TopicNames topics;
    private final DevicePrincipal bo = new DevicePrincipal("u-bo", "d-bo", 1);

    @BeforeEach
    void setUp(TestStack stack) throws Exception {
        this.stack = stack;
        db = stack.dataSource();
        topics = TopicNames.from(stack.settings(Map.of()));
        Topics.create(stack.kafkaBootstrap(), topics.conversationKeyed(), 3);
        sql("INSERT INTO users (user_id) VALUES ('u-bo')",
            "INSERT INTO devices (device_id, user_id, token_hash) VALUES ('d-bo', 'u-bo', '\\x01')",
            "INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('c1', 'group', 9)",
            "INSERT INTO memberships (conv_id, user_id, from_seq) VALUES ('c1', 'u-bo', 1)");
    }

    @Test
    void everyMovedCursorIsOnTheTopicBeforeItsTransactionCommitsAndAnAckThatMovesNothingPublishesNothing() throws Exception {
        List<Long> committedWhilePublishing = new ArrayList<>();
        try (KafkaCursorSink kafka = new KafkaCursorSink(KafkaClientConfig.plain(stack.kafkaBootstrap()), topics, "t-cursors")) {
            CursorSink watching = records -> {
                kafka.publish(records);
                committedWhilePublishing.add(storedCursor());   // what other transactions see meanwhile
            };
            CursorService service = new CursorService(db, watching, Metrics.detached(), Tags.empty());
            assertEquals(5, service.ack(bo, "c1", 5));
            assertEquals(5, service.ack(bo, "c1", 3), "moves nothing: the stored value back");
            assertEquals(5, service.ack(bo, "c1", 5), "a repeat moves nothing either");
            assertEquals(7, service.ack(bo, "c1", 7));
        }
        assertEquals(List.of(-1L, 5L), committedWhilePublishing,
                "each record was acknowledged while its transaction was still open (no row, then 5)");
        List<CursorRecord> onTopic = readCursors(2);
        assertEquals(2, onTopic.size(), "one record per moved cursor, none for the acks that moved nothing: " + onTopic);
        CursorRecord.Update first = (CursorRecord.Update) onTopic.get(0);
        CursorRecord.Update second = (CursorRecord.Update) onTopic.get(1);
        assertEquals(List.of("c1", "d-bo", 1, 5L), List.of(first.conv(), first.device(), first.epoch(), first.delivered()));
        assertEquals(7, second.delivered());
        assertTrue(first.at() > 1_700_000_000_000L && second.at() >= first.at(), "at is the row's updated_at in epoch ms");
    }

    @Test
    void anAckWhoseRecordKafkaDoesNotAcknowledgeIsUnavailableAndWritesNothing() throws Exception {
        try (KafkaCursorSink unreachable = new KafkaCursorSink(KafkaClientConfig.plain("127.0.0.1:1"), topics, "t-unreachable")) {
            CursorService service = new CursorService(db, unreachable, Metrics.detached(), Tags.empty());
            long started = System.nanoTime();
            assertThrows(DatabaseUnavailableException.class, () -> service.ack(bo, "c1", 4));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            assertTrue(tookMs < KafkaCursorSink.TIMEOUT.toMillis() + 3_000, "bounded by the sink's timeout: " + tookMs + " ms");
        }
        assertEquals(-1, storedCursor(), "rolled back: a cursor is never committed without its record");
        // The device retries once Kafka answers: the same ack then commits and publishes.
        try (KafkaCursorSink kafka = new KafkaCursorSink(KafkaClientConfig.plain(stack.kafkaBootstrap()), topics, "t-cursors")) {
            assertEquals(4, new CursorService(db, kafka, Metrics.detached(), Tags.empty()).ack(bo, "c1", 4));
        }
        assertEquals(4, ((CursorRecord.Update) readCursors(1).get(0)).delivered());
    }

    /** bo's stored cursor in c1 as another connection sees it; -1 without a row. */
    private long storedCursor() {
        try (Connection c = db.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c1'")) {
            return rs.next() ? rs.getLong(1) : -1;
        } catch (java.sql.SQLException e) {
            throw new AssertionError(e);
        }
    }

    private List<CursorRecord> readCursors(int atLeast) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<CursorRecord> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topics.cursors()).forEach(i -> parts.add(new TopicPartition(i.topic(), i.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (out.size() < atLeast && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> {
                    assertEquals(r.key(), CursorRecord.read(r.value()).conv(), "keyed by conversation");
                    out.add(CursorRecord.read(r.value()));
                });
            }
            // Anything else already on the topic comes with the same poll or the next one.
            consumer.poll(Duration.ofMillis(500)).forEach(r -> out.add(CursorRecord.read(r.value())));
        }
        return out;
    }

    private void sql(String... statements) throws Exception {
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            for (String s : statements) st.execute(s);
        }
    }
}
