package im.store.cursor;

import im.infra.db.Transactions;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ReadState;
import im.topics.CursorRecord;
import im.topics.PairKey;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The users' read cursors ({@code read_cursors}) and the read state they give
 * (docs/protocol.md, "Read state and unread counts"). A read cursor is per user and
 * conversation; it only grows ({@code GREATEST}) and never passes the head the user may see: a
 * read above the conversation's head is refused {@code CURSOR_AHEAD} (after the same locking
 * re-read as an ack, {@link CursorService#RECHECK}), a former member's is capped at its leave.
 *
 * <p>The unread count of a state is {@link #unreadVisible}: the messages of others the user may see,
 * in any of its periods, with {@code read < seq <= head}, where {@code head} is the head the user may
 * see. Two running counts on the events make it four index probes per period ({@code unread_between},
 * V9) whatever the history's length.
 *
 * <p>Reads are written in batches, as acks are ({@link #markReads}; {@link ReadWriter} forms the
 * batches): one round trip checks every read of the batch, reads of the same (user, conversation)
 * collapse into one row write, one upsert writes them all, and one statement counts the unread of
 * every row the batch touched. The statements ({@link #CHECK}, {@link #UPSERT}, {@link #UNREAD}) are
 * public so that the benchmark runs exactly them through pgbench as the floor.
 *
 * <p>Every read cursor the batch moves is published as a {@link CursorRecord.Read} through the
 * {@link CursorSink} before its transaction commits, like a delivered cursor.
 */
public final class ReadCursors {
    /**
     * For each read (parameters: the batch's devices, then the reads' devices and conversations, as
     * arrays): its ordinal, the device's install and credential (the devices locked FOR SHARE in
     * byte order until commit, as an ack's check does: a reinstall waits), the head, the last seq the
     * user may see (NULL if never a member) and the stored read cursor.
     */
    public static final String CHECK =
            "WITH d AS MATERIALIZED (SELECT device_id, user_id, install_epoch, credential FROM devices"
            + "   WHERE device_id = ANY(?::text[]) ORDER BY device_id COLLATE \"C\" FOR SHARE)"
            + " SELECT a.i, d.install_epoch, d.credential, c.head_seq,"
            + " " + CursorService.visibleHead("d.user_id") + ","
            + " (SELECT r.read_seq FROM read_cursors r WHERE r.user_id = d.user_id AND r.conv_id = a.conv)"
            + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS a(device, conv, i)"
            + " LEFT JOIN d ON d.device_id = a.device"
            + " LEFT JOIN conversations c ON c.conv_id = a.conv";

    /**
     * The merge of distinct (user, conv) rows (parameters: users, conversations, seqs), written in
     * (user, conv) byte order, the lock order; a row only grows. Returns the rows it moved.
     */
    public static final String UPSERT =
            "INSERT INTO read_cursors AS r (user_id, conv_id, read_seq)"
            + " SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[]) AS u(usr, conv, seq)"
            + " ORDER BY usr COLLATE \"C\", conv COLLATE \"C\""
            + " ON CONFLICT (user_id, conv_id) DO UPDATE SET read_seq = EXCLUDED.read_seq, updated_at = clock_timestamp()"
            + " WHERE r.read_seq < EXCLUDED.read_seq"
            + " RETURNING user_id, conv_id, read_seq, (extract(epoch FROM updated_at) * 1000)::bigint";

    /**
     * SQL for the unread count of {@code user} in {@code conv} with its read cursor at {@code read}
     * and {@code high} the last seq it may see (SQL expressions): {@code unread_between} (migration V9)
     * over each of the user's membership periods, from the cursor or the period's start to its end or
     * {@code high}, summed. A correlated subquery, so that PostgreSQL plans it once with the statement
     * and inlines {@code unread_between} (a SQL function holding an aggregate, as {@code unread_visible}
     * of V11 did, is run apart for every row: a {@code sub} page of 500 took 90 ms instead of 13).
     */
    static String unreadVisible(String conv, String user, String read, String high) {
        return "(SELECT COALESCE(sum(unread_between(" + conv + ", " + user + ", GREATEST(" + read + ", m.from_seq - 1),"
                + " LEAST(COALESCE(m.to_seq, " + high + "), " + high + "))), 0)::bigint"
                + " FROM memberships m WHERE m.conv_id = " + conv + " AND m.user_id = " + user + " AND m.from_seq <= " + high + ")";
    }

    /**
     * The unread counts of read states. Parameters, as arrays: conversations, users, read cursors,
     * the last seqs the users may see. Rows: ordinal, unread count.
     */
    public static final String UNREAD = "SELECT r.i, " + unreadVisible("r.conv", "r.usr", "r.rd", "r.hi")
            + " FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[]) WITH ORDINALITY AS r(conv, usr, rd, hi, i)";

    /**
     * The read state of each of a user's conversations in {@code convs} (at most a page of
     * {@code sub}): conversation, read cursor, unread count, the head the user may see. A
     * conversation the user never was a member of is not listed.
     */
    static final String STATES =
            "SELECT q.conv, COALESCE(q.read, 0), " + unreadVisible("q.conv", "q.usr", "COALESCE(q.read, 0)", "q.visible") + ", q.visible"
            + " FROM (SELECT c.conv_id AS conv, ?::text AS usr,"
            + "   " + CursorService.visibleHead("?") + " AS visible,"
            + "   (SELECT r.read_seq FROM read_cursors r WHERE r.user_id = ? AND r.conv_id = c.conv_id) AS read"
            + "   FROM conversations c WHERE c.conv_id = ANY(?::text[]) OFFSET 0) q"
            + " WHERE q.visible IS NOT NULL";

    /** A conversation's read state, as {@link #states} lists it. */
    public record ConvReadState(String conv, ReadState state) {}

    /**
     * The read state after a read, and whether this read moved the cursor (then it was published;
     * of several reads of one (user, conversation) in a batch, only the first says so).
     */
    public record Marked(ReadState state, boolean moved) {}

    /** One device's read: "my user has read conv up to seq". */
    public record ReadRequest(DevicePrincipal who, String conv, long seq) {
        /** The (conversation, user) row the read writes, as a {@link PairKey}: reads of one user's devices collapse under it. */
        String row() {
            return PairKey.of(conv, who.userId());
        }
    }

    /** A (user, conversation) row of a batch: the cursor to write, the last seq the user may see, the stored cursor. */
    private static final class Row {
        final String user;
        final String conv;
        long visible;
        long target;
        long stored;
        long read;
        long unread;
        int first = -1;   // the first read of the batch that wrote this row
        boolean moved;

        Row(String user, String conv, long visible, long stored) {
            this.user = user;
            this.conv = conv;
            this.visible = visible;
            this.stored = stored;
            this.target = stored;
        }
    }

    private final DataSource db;
    private final CursorSink sink;

    public ReadCursors(DataSource db, CursorSink sink) {
        this.db = db;
        this.sink = sink;
    }

    /**
     * Moves {@code who}'s user's read cursor of {@code conv} up to {@code seq} (capped at the
     * user's last visible seq) and returns the read state after it, and whether this read moved it.
     *
     * @throws AckRejectedException {@code STALE_INSTALL}, {@code BAD_TOKEN}, {@code NOT_MEMBER}
     *         (also for a conversation that does not exist) or {@code CURSOR_AHEAD}
     */
    public Marked markRead(DevicePrincipal who, String conv, long seq) {
        GroupCommit.Outcome<Marked> o = markReads(List.of(new ReadRequest(who, conv, seq))).get(0);
        if (o.rejected() != null) throw o.rejected();
        return o.value();
    }

    /**
     * Validates and writes a batch of reads in one transaction, as {@link #markRead} does each;
     * outcomes in request order (a refused read is refused alone, the batch's other reads are written).
     */
    List<GroupCommit.Outcome<Marked>> markReads(List<ReadRequest> reads) {
        int n = reads.size();
        return Transactions.run(db, "read", c -> {
            @SuppressWarnings("unchecked")
            GroupCommit.Outcome<Marked>[] out = new GroupCommit.Outcome[n];
            Row[] rowOf = new Row[n];
            Map<String, Row> rows = new TreeMap<>();
            TreeMap<String, List<Integer>> ahead = new TreeMap<>();   // conv → reads above the head the check saw
            String[] devices = new String[n];
            String[] convs = new String[n];
            for (int i = 0; i < n; i++) {
                devices[i] = reads.get(i).who().deviceId();
                convs[i] = reads.get(i).conv();
            }
            try (PreparedStatement ps = c.prepareStatement(CHECK)) {
                Array d = c.createArrayOf("text", devices);
                ps.setArray(1, d);
                ps.setArray(2, d);
                ps.setArray(3, c.createArrayOf("text", convs));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        int i = rs.getInt(1) - 1;
                        ReadRequest r = reads.get(i);
                        int epoch = rs.getInt(2);
                        if (rs.wasNull() || epoch != r.who().installEpoch()) {
                            out[i] = GroupCommit.Outcome.refused(new AckRejectedException(ErrorCode.STALE_INSTALL,
                                    "device " + r.who().deviceId() + " was reinstalled; this install may not read"));
                            continue;
                        }
                        if (rs.getLong(3) != r.who().credential()) {
                            out[i] = GroupCommit.Outcome.refused(new AckRejectedException(ErrorCode.BAD_TOKEN, DevicePrincipal.CREDENTIAL_SUPERSEDED));
                            continue;
                        }
                        long head = rs.getLong(4);
                        long visible = rs.getLong(5);
                        if (rs.wasNull()) {
                            out[i] = GroupCommit.Outcome.refused(new AckRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + r.conv()));
                            continue;
                        }
                        long stored = rs.getLong(6);
                        Row row = rows.computeIfAbsent(r.row(), k -> new Row(r.who().userId(), r.conv(), visible, stored));
                        if (r.seq() > head) {
                            // As for an ack: the event may be streamed a moment before its send is visible; wait for it.
                            ahead.computeIfAbsent(r.conv(), k -> new ArrayList<>()).add(i);
                        } else {
                            rowOf[i] = row;
                        }
                    }
                }
            }
            if (!ahead.isEmpty()) {
                try (PreparedStatement ps = c.prepareStatement(CursorService.RECHECK)) {   // in conversation order: the lock order
                    for (List<Integer> waiting : ahead.values()) {
                        for (int i : waiting) {
                            ReadRequest r = reads.get(i);
                            ps.setString(1, r.who().userId());
                            ps.setString(2, r.conv());
                            try (ResultSet rs = ps.executeQuery()) {
                                rs.next();
                                long head = rs.getLong(1);
                                long visible = rs.getLong(2);
                                if (r.seq() > head) {
                                    out[i] = GroupCommit.Outcome.refused(new AckRejectedException(ErrorCode.CURSOR_AHEAD,
                                            "seq=" + r.seq() + " head=" + head));
                                } else {
                                    rowOf[i] = rows.get(r.row());
                                    rowOf[i].visible = Math.max(rowOf[i].visible, visible);   // the send it waited for moved it
                                }
                            }
                        }
                    }
                }
            }
            for (int i = 0; i < n; i++) {
                Row row = rowOf[i];
                if (row == null) continue;
                long capped = Math.min(reads.get(i).seq(), row.visible);
                row.target = Math.max(row.target, capped);
                if (row.first < 0) row.first = i;
            }
            write(c, rows.values());
            unread(c, rows.values());
            for (int i = 0; i < n; i++) {
                Row row = rowOf[i];
                if (row == null) continue;
                out[i] = GroupCommit.Outcome.of(new Marked(new ReadState(row.read, row.unread, row.visible), row.moved && row.first == i));
            }
            return List.of(out);
        });
    }

    /** Upserts the rows whose target passed their stored cursor, publishes what moved; sets each row's read. */
    private void write(Connection c, java.util.Collection<Row> rows) throws SQLException {
        List<Row> moving = new ArrayList<>();
        for (Row row : rows) {
            row.read = row.stored;
            if (row.target > row.stored) moving.add(row);
        }
        if (moving.isEmpty()) return;
        int m = moving.size();
        String[] users = new String[m];
        String[] convs = new String[m];
        Long[] seqs = new Long[m];
        for (int k = 0; k < m; k++) {
            users[k] = moving.get(k).user;
            convs[k] = moving.get(k).conv;
            seqs[k] = moving.get(k).target;
        }
        Map<String, Row> byKey = new HashMap<>();
        for (Row row : moving) byKey.put(PairKey.of(row.conv, row.user), row);
        List<CursorRecord> records = new ArrayList<>(m);
        try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
            ps.setArray(1, c.createArrayOf("text", users));
            ps.setArray(2, c.createArrayOf("text", convs));
            ps.setArray(3, c.createArrayOf("int8", seqs));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Row row = byKey.remove(PairKey.of(rs.getString(2), rs.getString(1)));
                    row.read = rs.getLong(3);
                    row.moved = true;
                    records.add(new CursorRecord.Read(row.conv, row.user, row.read, rs.getLong(4)));
                }
            }
        }
        // Before COMMIT, with the rows still locked: a committed read cursor is always on the topic.
        sink.publish(records);
        // Not returned: a concurrent batch moved the row further since the check; read where it is.
        for (Row row : byKey.values()) row.read = storedRead(c, row.user, row.conv);
    }

    /** Sets each row's unread count, at its read cursor, in one statement. */
    private static void unread(Connection c, java.util.Collection<Row> rows) throws SQLException {
        if (rows.isEmpty()) return;
        List<Row> list = new ArrayList<>(rows);
        int m = list.size();
        String[] convs = new String[m];
        String[] users = new String[m];
        Long[] reads = new Long[m];
        Long[] highs = new Long[m];
        for (int k = 0; k < m; k++) {
            Row row = list.get(k);
            convs[k] = row.conv;
            users[k] = row.user;
            reads[k] = row.read;
            highs[k] = row.visible;
        }
        try (PreparedStatement ps = c.prepareStatement(UNREAD)) {
            ps.setArray(1, c.createArrayOf("text", convs));
            ps.setArray(2, c.createArrayOf("text", users));
            ps.setArray(3, c.createArrayOf("int8", reads));
            ps.setArray(4, c.createArrayOf("int8", highs));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) list.get(rs.getInt(1) - 1).unread = rs.getLong(2);
            }
        }
    }

    /** The read states of {@code user} in {@code convs} (a page of {@code sub}), in no particular order. */
    public List<ConvReadState> states(String user, List<String> convs) {
        if (convs.isEmpty()) return List.of();
        return Transactions.run(db, "read states", c -> {
            List<ConvReadState> out = new java.util.ArrayList<>(convs.size());
            try (PreparedStatement ps = c.prepareStatement(STATES)) {
                ps.setString(1, user);
                ps.setString(2, user);
                ps.setString(3, user);
                ps.setArray(4, c.createArrayOf("text", convs.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ConvReadState(rs.getString(1), new ReadState(rs.getLong(2), rs.getLong(3), rs.getLong(4))));
                    }
                }
            }
            return out;
        });
    }

    private static long storedRead(Connection c, String user, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT read_seq FROM read_cursors WHERE user_id = ? AND conv_id = ?")) {
            ps.setString(1, user);
            ps.setString(2, conv);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

}
