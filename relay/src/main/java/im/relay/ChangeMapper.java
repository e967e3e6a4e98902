package im.relay;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.infra.kafka.TopicNames;
import java.time.OffsetDateTime;
import java.util.Optional;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Turns a Debezium change of {@code events} or {@code device_cursors} into the platform's clean
 * record: key = conversation id, value = the documented JSON (docs/topics.md), never the Debezium
 * envelope. Pure: no I/O, unit-tested.
 */
public final class ChangeMapper {
    /** Schema version written in every value as {@code "v"}. */
    public static final int VERSION = 1;

    private static final ObjectMapper JSON = new ObjectMapper();
    private final TopicNames topics;

    public ChangeMapper(TopicNames topics) {
        this.topics = topics;
    }

    /** The record to publish, or empty for changes that are not published (e.g. heartbeats). */
    public Optional<ProducerRecord<String, String>> map(SourceRecord change) {
        if (!(change.value() instanceof Struct)) return Optional.empty();
        Struct envelope = (Struct) change.value();
        if (envelope.schema().field("op") == null) return Optional.empty();
        String op = envelope.getString("op");
        Struct source = envelope.getStruct("source");
        String table = source.getString("table");
        if ("events".equals(table)) {
            if (!"c".equals(op) && !"r".equals(op)) {
                throw new IllegalStateException("events is append-only, yet saw op=" + op + " at " + change.sourceOffset());
            }
            return Optional.of(event(envelope.getStruct("after")));
        }
        if ("device_cursors".equals(table)) {
            if ("d".equals(op)) return Optional.of(cursorDeleted(envelope.getStruct("before")));
            return Optional.of(cursor(envelope.getStruct("after")));
        }
        return Optional.empty();
    }

    private ProducerRecord<String, String> event(Struct row) {
        String conv = row.getString("conv_id");
        ObjectNode v = JSON.createObjectNode()
                .put("v", VERSION)
                .put("conv", conv)
                .put("seq", row.getInt64("seq"))
                .put("kind", row.getString("kind"))
                .put("mid", row.getString("mid"))
                .put("sender", row.getString("sender"))
                .put("device", row.getString("sender_device"))
                .put("cmid", row.getString("cmid"))
                .put("body", row.getString("body"))
                .put("at", millis(row.get("created_at")));
        return new ProducerRecord<>(topics.events(), conv, v.toString());
    }

    private ProducerRecord<String, String> cursor(Struct row) {
        String conv = row.getString("conv_id");
        ObjectNode v = JSON.createObjectNode()
                .put("v", VERSION)
                .put("conv", conv)
                .put("device", row.getString("device_id"))
                .put("epoch", row.getInt32("install_epoch"))
                .put("delivered", row.getInt64("delivered_seq"))
                .put("at", millis(row.get("updated_at")));
        return new ProducerRecord<>(topics.cursors(), conv, v.toString());
    }

    private ProducerRecord<String, String> cursorDeleted(Struct key) {
        String conv = key.getString("conv_id");
        ObjectNode v = JSON.createObjectNode()
                .put("v", VERSION)
                .put("conv", conv)
                .put("device", key.getString("device_id"))
                .put("deleted", true);
        return new ProducerRecord<>(topics.cursors(), conv, v.toString());
    }

    /** Debezium renders timestamptz as an ISO-8601 string (io.debezium.time.ZonedTimestamp). */
    static long millis(Object ts) {
        if (ts == null) return 0;
        if (ts instanceof Number) return ((Number) ts).longValue() / 1000;   // micros, if configured so
        return OffsetDateTime.parse(ts.toString()).toInstant().toEpochMilli();
    }
}
