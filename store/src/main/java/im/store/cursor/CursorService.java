package im.store.cursor;

import im.protocol.ErrorCode;
import im.infra.db.Transactions;
import im.infra.identity.DevicePrincipal;
import im.infra.ops.Metrics;
import im.topics.Cursor;
import im.topics.CursorRecord;
import im.topics.PairKey;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Merges device acks into {@code device_cursors}. An ack of seq n means "this device durably
 * stored every visible event up to n" (D3); the stored cursor only grows (GREATEST) and never
 * exceeds the conversation head (D4): an ack above the head is refused ({@code CURSOR_AHEAD})
 * once a locking re-read ({@link #RECHECK}) shows no send making it valid,
 * and a former member's ack is capped at the end of their last visibility period, the last seq
 * they may see. The reply carries the merged value, so a device that restored old state learns
 * the server's larger cursor.
 *
 * <p>Acks are validated and written in batches: one round trip checks every ack of the batch
 * (install epoch, membership, head), acks of the same (device, conversation) collapse into one
 * row write, and one upsert writes them all in one transaction. {@link CursorWriter} forms the
 * batches from concurrent acks.
 *
 * <p>Every cursor the upsert moves is published as a {@code <prefix>cursors} record through the
 * {@link CursorSink} before the transaction commits (an ack that moves nothing publishes nothing).
 * Cursor rows are not in the CDC relay's publication: at one row per few pushes they were most of
 * what it decoded and published (docs/architecture.md, "Cursor records").
 *
 * <p>Concurrent batches may share rows. The upsert therefore writes (and locks) its rows in one
 * global order, by (device, conversation), so two batches can never wait for each other in a
 * cycle: without it, batches listing the same rows in arrival order deadlocked under load.
 *
 * <p>Delivery latency ({@code im.delivery.latency}): the check also reads, for the batch's first
 * ack only, the commit time ({@code events.created_at}, set inside the send's transaction) of the
 * first event that ack newly covers; once the cursor transaction committed, the time since is one
 * sample. Sampling one ack per transaction keeps the cost at one index probe per transaction
 * (about 20 µs measured, against 2-5 ms for a check of 64 acks); probing for every ack cost about
 * a quarter more per check. Under light load every ack is its own transaction, so all are sampled.
 */
public final class CursorService {
    /**
     * Per ack: the device's current install epoch, the head, the last seq the user may see
     * (the head while a member, else the end of their last visibility period; NULL if they never
     * were one), the cursor this install stored (NULL if none) and, for the first ack only, how old
     * (ms, by the database's clock) the first event is that it would newly cover (NULL without a
     * stored cursor: a first ack, e.g. after a join or a reinstall, is history, not a delivery). The batch's devices rows are locked FOR SHARE, in device order, until the upsert
     * commits: a reinstall (which locks the row FOR UPDATE, then deletes the device's cursors) is
     * then either visible to this check, or waits and deletes what this batch wrote. Without the
     * lock an old-epoch row could be written after the reinstall's delete.
     */
    /**
     * SQL: the last seq {@code user} (an SQL expression) may see in the conversation of the row
     * {@code c} of {@code conversations}: the head while a member, else the end of its last period;
     * NULL if it never was one ({@code Period}; {@code PeriodSqlIT} checks the ack cap built on it).
     */
    static String visibleHead(String user) {
        return "(SELECT max(LEAST(COALESCE(m.to_seq, c.head_seq), c.head_seq)) FROM memberships m"
                + " WHERE m.conv_id = c.conv_id AND m.user_id = " + user + ")";
    }

    static final String CHECK =
            "WITH d AS MATERIALIZED (SELECT device_id, user_id, install_epoch, credential FROM devices"
            + "   WHERE device_id = ANY(?::text[]) ORDER BY device_id COLLATE \"C\" FOR SHARE)"
            + " SELECT q.i, q.install_epoch, q.head_seq, q.visible, q.stored,"
            // The delivery-latency sample: for the batch's first ack only, the age of the first
            // event it would newly cover (one index probe per transaction, not per ack).
            + " CASE WHEN q.i = 1 THEN (SELECT (extract(epoch FROM clock_timestamp() - e.created_at) * 1000)::bigint"
            + "   FROM events e WHERE e.conv_id = q.conv AND e.seq = q.stored + 1) END,"
            + " q.credential"
            + " FROM (SELECT a.i, a.conv, d.install_epoch, d.credential, c.head_seq,"
            + " " + visibleHead("d.user_id") + " AS visible,"
            + " (SELECT dc.delivered_seq FROM device_cursors dc"
            + "   WHERE dc.device_id = a.device AND dc.conv_id = a.conv AND dc.install_epoch = d.install_epoch) AS stored"
            + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS a(device, conv, i)"
            + " LEFT JOIN d ON d.device_id = a.device"
            + " LEFT JOIN conversations c ON c.conv_id = a.conv"
            + " OFFSET 0) q";   // a fence: without it the planner inlines q and runs the cursor subquery twice

    /**
     * The merge, for distinct (device, conv) pairs, written in (device, conv) order (the lock
     * order; byte order, whatever order the caller passes them in). The merge is {@link Cursor#merge}
     * ({@code CursorMergeIT} checks the two agree): a cursor written by an older install of the
     * device is replaced, not merged, since the new install holds nothing of what the old one
     * stored; one of a newer install is never overwritten (the check's lock on the device row makes
     * that case unreachable here, but the rule is the one rule). A row the merge would not change
     * is not updated (no new row version, so no WAL and no CDC record); it returns nothing, and the
     * caller replies with what it knows of the stored cursor.
     */
    static final String UPSERT =
            "INSERT INTO device_cursors AS dc (device_id, conv_id, install_epoch, delivered_seq)"
            + " SELECT * FROM unnest(?::text[], ?::text[], ?::int[], ?::bigint[]) AS u(d, c, e, s)"
            + " ORDER BY d COLLATE \"C\", c COLLATE \"C\""
            + " ON CONFLICT (device_id, conv_id) DO UPDATE SET"
            + "  delivered_seq = EXCLUDED.delivered_seq, install_epoch = EXCLUDED.install_epoch, updated_at = clock_timestamp()"
            // Cursor.merge: a higher epoch starts over, the same epoch keeps the larger seq, a lower epoch is stale.
            + " WHERE dc.install_epoch < EXCLUDED.install_epoch"
            + "    OR (dc.install_epoch = EXCLUDED.install_epoch AND dc.delivered_seq < EXCLUDED.delivered_seq)"
            + " RETURNING device_id, conv_id, delivered_seq, install_epoch, (extract(epoch FROM updated_at) * 1000)::bigint";

    /**
     * An ack above the head its check saw, read again with a lock: logical decoding streams a
     * send's commit once its WAL record is flushed, a moment before the transaction becomes
     * visible to new snapshots, so a device can ack a push whose send the check does not see yet.
     * {@code FOR SHARE} waits for the sender's row lock on the conversation, that is until the
     * send is visible (or rolled back), and then reads the head it left: no time bound, and an
     * ack of a seq that no send is writing is refused at once.
     */
    static final String RECHECK =
            "SELECT c.head_seq, " + visibleHead("?")
            + " FROM conversations c WHERE c.conv_id = ? FOR SHARE OF c";

    /** The outcome of one ack of a batch: the merged cursor, or why it was refused. */
    public record Outcome(long delivered, AckRejectedException rejected) {
        public long orThrow() {
            if (rejected != null) throw rejected;
            return delivered;
        }
    }

    private final DataSource db;
    private final CursorSink sink;
    private final Timer deliveryLatency;

    /** A cursor service that publishes no cursor records (no Kafka). */
    public CursorService(DataSource db) {
        this(db, CursorSink.NONE, Metrics.detached(), Tags.empty());
    }

    /**
     * @param sink   receives the records of every cursor the transaction moves, before it commits
     * @param meters receives {@code im.delivery.latency}: per sampled cursor advance, from the
     *               commit of the first event it newly covers to the commit of the cursor
     */
    public CursorService(DataSource db, CursorSink sink, MeterRegistry meters, Tags tags) {
        this.db = db;
        this.sink = sink;
        this.deliveryLatency = Timer.builder("im.delivery.latency")
                .description("commit of an event to the commit of a device cursor covering it (sampled: the first ack of each cursor transaction)")
                .tags(tags).publishPercentileHistogram()
                .serviceLevelObjectives(Duration.ofSeconds(1), Duration.ofSeconds(5), Duration.ofSeconds(30), Duration.ofMinutes(5))
                .minimumExpectedValue(Duration.ofMillis(5)).maximumExpectedValue(Duration.ofHours(1))
                .register(meters);
    }

    /** Validates and merges one ack; returns the merged cursor. */
    public long ack(DevicePrincipal who, String conv, long seq) {
        return ackBatch(List.of(new AckRequest(who, conv, seq))).get(0).orThrow();
    }

    /** Validates and merges a batch of acks in one transaction; outcomes in request order. */
    public List<Outcome> ackBatch(List<AckRequest> acks) {
        if (acks.isEmpty()) return List.of();
        int n = acks.size();
        // The latency sample: the age (ms) at the check of the first ack's first new event, when the
        // check ran (nanoTime), and 1 once the upsert moved the first ack's cursor.
        long[] sample = new long[3];
        String firstKey = acks.get(0).pair();
        List<Outcome> outcomes = Transactions.run(db, "ack", c -> {
            sample[0] = -1;
            sample[2] = 0;
            Outcome[] out = new Outcome[n];
            String[] devices = new String[n];
            String[] convs = new String[n];
            for (int i = 0; i < n; i++) {
                devices[i] = acks.get(i).who().deviceId();
                convs[i] = acks.get(i).conv();
            }
            // Valid acks, collapsed per (conv, device) pair (PairKey) to the largest seq; the upsert sorts them into its lock order.
            Map<String, AckRequest> merged = new TreeMap<>();
            Map<String, Long> stored = new HashMap<>();
            TreeMap<String, List<Integer>> ahead = new TreeMap<>();   // conv → acks above the head the check saw
            try (PreparedStatement ps = c.prepareStatement(CHECK)) {
                Array d = c.createArrayOf("text", devices);
                Array v = c.createArrayOf("text", convs);
                ps.setArray(1, d);
                ps.setArray(2, d);
                ps.setArray(3, v);
                try (ResultSet rs = ps.executeQuery()) {
                    sample[1] = System.nanoTime();
                    while (rs.next()) {
                        long age = rs.getLong(6);
                        if (!rs.wasNull()) sample[0] = Math.max(0, age);
                        int i = rs.getInt(1) - 1;
                        AckRequest a = acks.get(i);
                        AckRejectedException bad = validate(a, rs);
                        if (bad != null && bad.errorCode() == ErrorCode.CURSOR_AHEAD && a.seq() > 0) {
                            ahead.computeIfAbsent(a.conv(), k -> new ArrayList<>()).add(i);
                            long cursor = rs.getLong(5);
                            if (!rs.wasNull()) stored.put(a.pair(), cursor);
                        } else if (bad != null) {
                            out[i] = new Outcome(0, bad);
                        } else {
                            // A former member has stored everything visible to them once they hold
                            // their last period: the cursor stops there (the reply says so), it
                            // does not follow the head into events they may not see.
                            AckRequest capped = new AckRequest(a.who(), a.conv(), Math.min(a.seq(), rs.getLong(4)));
                            String key = a.pair();
                            merged.merge(key, capped, (x, y) -> x.seq() >= y.seq() ? x : y);
                            long cursor = rs.getLong(5);
                            if (!rs.wasNull()) stored.put(key, cursor);
                        }
                    }
                }
            }
            if (!ahead.isEmpty()) {
                try (PreparedStatement ps = c.prepareStatement(RECHECK)) {   // in conversation order: the lock order
                    for (Map.Entry<String, List<Integer>> e : ahead.entrySet()) {
                        for (int i : e.getValue()) {
                            AckRequest a = acks.get(i);
                            ps.setString(1, a.who().userId());
                            ps.setString(2, a.conv());
                            try (ResultSet rs = ps.executeQuery()) {
                                rs.next();   // the check found the conversation, and conversations are never deleted
                                long head = rs.getLong(1);
                                long visible = rs.getLong(2);
                                if (a.seq() > head) {
                                    out[i] = new Outcome(0, new AckRejectedException(ErrorCode.CURSOR_AHEAD,
                                            "seq=" + a.seq() + " head=" + head));
                                } else {
                                    AckRequest capped = new AckRequest(a.who(), a.conv(), Math.min(a.seq(), visible));
                                    merged.merge(a.pair(), capped, (x, y) -> x.seq() >= y.seq() ? x : y);
                                }
                            }
                        }
                    }
                }
            }
            // An ack that does not advance this install's stored cursor (repeated, or older than
            // state the device restored) writes nothing; the reply is the stored cursor.
            Map<String, Long> result = new HashMap<>();
            merged.entrySet().removeIf(e -> {
                Long cursor = stored.get(e.getKey());
                if (cursor == null || cursor < e.getValue().seq()) return false;
                result.put(e.getKey(), cursor);
                return true;
            });
            if (!merged.isEmpty()) {
                int m = merged.size();
                String[] md = new String[m];
                String[] mc = new String[m];
                Integer[] me = new Integer[m];
                Long[] ms = new Long[m];
                int k = 0;
                for (AckRequest a : merged.values()) {
                    md[k] = a.who().deviceId();
                    mc[k] = a.conv();
                    me[k] = a.who().installEpoch();
                    ms[k] = a.seq();
                    k++;
                }
                try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
                    ps.setArray(1, c.createArrayOf("text", md));
                    ps.setArray(2, c.createArrayOf("text", mc));
                    ps.setArray(3, c.createArrayOf("int4", me));
                    ps.setArray(4, c.createArrayOf("int8", ms));
                    List<CursorRecord> moved = new ArrayList<>(m);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            String key = PairKey.of(rs.getString(2), rs.getString(1));
                            result.put(key, rs.getLong(3));
                            if (key.equals(firstKey)) sample[2] = 1;
                            moved.add(new CursorRecord.Update(rs.getString(2), rs.getString(1), rs.getInt(4), rs.getLong(3), rs.getLong(5)));
                        }
                    }
                    // Before COMMIT, with the rows still locked: a committed change is always on the
                    // topic, and the next change of a row is published after this one (CursorSink).
                    sink.publish(moved);
                }
                // A row a concurrent batch moved past this ack since the check was not updated
                // and returned nothing: the ack itself is a true lower bound of the stored cursor.
                merged.forEach((key, a) -> result.putIfAbsent(key, a.seq()));
            }
            for (int i = 0; i < n; i++) {
                if (out[i] == null) {
                    AckRequest a = acks.get(i);
                    out[i] = new Outcome(result.get(a.pair()), null);
                }
            }
            return List.of(out);
        });
        // After the commit: the first ack's cursor now covers the sampled event (a row a concurrent
        // batch moved first is that batch's delivery, not this one's).
        if (sample[0] >= 0 && sample[2] == 1) {
            deliveryLatency.record(sample[0] + (System.nanoTime() - sample[1]) / 1_000_000, TimeUnit.MILLISECONDS);
        }
        return outcomes;
    }

    private static AckRejectedException validate(AckRequest a, ResultSet rs) throws SQLException {
        int epoch = rs.getInt(2);
        if (rs.wasNull() || epoch != a.who().installEpoch()) {
            return new AckRejectedException(ErrorCode.STALE_INSTALL,
                    "device " + a.who().deviceId() + " was reinstalled; this install may not ack");
        }
        if (rs.getLong(7) != a.who().credential()) {
            return new AckRejectedException(ErrorCode.BAD_TOKEN, DevicePrincipal.CREDENTIAL_SUPERSEDED);
        }
        long head = rs.getLong(3);
        if (rs.wasNull()) {
            return new AckRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + a.conv());
        }
        rs.getLong(4);
        if (rs.wasNull()) {
            return new AckRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + a.conv());
        }
        if (a.seq() < 0 || a.seq() > head) {
            return new AckRejectedException(ErrorCode.CURSOR_AHEAD, "seq=" + a.seq() + " head=" + head);
        }
        return null;
    }
}
