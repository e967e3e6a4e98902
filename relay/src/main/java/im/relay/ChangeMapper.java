package im.relay;

import im.infra.kafka.TopicNames;
import im.topics.CursorRecord;
import im.topics.EventRecord;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Turns a Debezium change of {@code events} or {@code cursor_resets} into the platform's clean
 * record: key = conversation id, value = the documented JSON (docs/topics.md), never the Debezium
 * envelope. Pure: no I/O, unit-tested.
 */
public final class ChangeMapper {
    /** Schema version written in every value as {@code "v"} ({@link EventRecord#VERSION}, {@link CursorRecord#VERSION}). */
    public static final int VERSION = EventRecord.VERSION;
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
            // The one change of a committed event is a recall's emptying of the message and its
            // edits (migration V10): nothing is published for it, the recall event is.
            if ("u".equals(op) && recalled(envelope.getStruct("after"))) return Optional.empty();
            if (!"c".equals(op) && !"r".equals(op)) {
                throw new IllegalStateException("events is append-only but for recalls, yet saw op=" + op + " at " + change.sourceOffset());
            }
            return Optional.of(event(envelope.getStruct("after")));
        }
        if ("cursor_resets".equals(table)) {
            // Appended by a reinstall, one row per conversation the device had a cursor in. Deleting
            // rows (pruning) publishes nothing.
            if (!"c".equals(op) && !"r".equals(op)) return Optional.empty();
            return Optional.of(cursorReset(envelope.getStruct("after")));
        }
        if ("device_cursors".equals(table)) {
            // No longer in the publication (the cursor service publishes cursor changes itself);
            // changes still in the slot from before that switch are published as they were.
            if ("d".equals(op)) return Optional.of(cursorDeleted(envelope.getStruct("before")));
            return Optional.of(cursor(envelope.getStruct("after")));
        }
        return Optional.empty();
    }

    private ProducerRecord<String, String> event(Struct row) {
        String conv = row.getString("conv_id");
        List<String> users = users(row);
        EventRecord v = new EventRecord(conv, row.getInt64("seq"), row.getString("kind"), row.getString("mid"),
                row.getString("sender"), row.getString("sender_device"), row.getString("cmid"), row.getString("body"),
                millis(row.get("created_at")), users == null ? 0 : users.size(), users, optionalLong(row, "ref_seq"));
        return new ProducerRecord<>(topics.events(), conv, v.toJson());
    }

    /** Whether an update of {@code events} is a recall's: the row now names the recall that emptied it. */
    static boolean recalled(Struct after) {
        return after != null && optionalLong(after, "recalled_by") > 0;
    }

    /** A nullable bigint column, 0 when NULL or when the row has the table's shape from before the column existed. */
    static long optionalLong(Struct row, String column) {
        if (row.schema().field(column) == null) return 0;
        Long v = row.getInt64(column);
        return v == null ? 0 : v;
    }

    /**
     * The users of a bulk join (column {@code users}, text[]), or null: for every other event, and
     * for a row decoded with the table's shape from before the column existed (migration V8).
     */
    static List<String> users(Struct row) {
        if (row.schema().field("users") == null) return null;
        List<Object> a = row.getArray("users");
        if (a == null) return null;
        List<String> out = new ArrayList<>(a.size());
        for (Object u : a) out.add((String) u);
        return out;
    }

    private ProducerRecord<String, String> cursor(Struct row) {
        String conv = row.getString("conv_id");
        CursorRecord v = new CursorRecord.Update(conv, row.getString("device_id"), row.getInt32("install_epoch"),
                row.getInt64("delivered_seq"), millis(row.get("updated_at")));
        return new ProducerRecord<>(topics.cursors(), conv, v.toJson());
    }

    private ProducerRecord<String, String> cursorDeleted(Struct key) {
        String conv = key.getString("conv_id");
        return new ProducerRecord<>(topics.cursors(), conv,
                new CursorRecord.Deleted(conv, key.getString("device_id"), CursorRecord.Deleted.ANY_EPOCH).toJson());
    }

    private ProducerRecord<String, String> cursorReset(Struct row) {
        String conv = row.getString("conv_id");
        return new ProducerRecord<>(topics.cursors(), conv,
                new CursorRecord.Deleted(conv, row.getString("device_id"), row.getInt32("install_epoch")).toJson());
    }

    /** Debezium renders timestamptz as an ISO-8601 string (io.debezium.time.ZonedTimestamp). */
    static long millis(Object ts) {
        if (ts == null) return 0;
        if (ts instanceof Number) return ((Number) ts).longValue() / 1000;   // micros, if configured so
        return OffsetDateTime.parse(ts.toString()).toInstant().toEpochMilli();
    }
}
