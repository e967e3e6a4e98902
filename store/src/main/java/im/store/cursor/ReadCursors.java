package im.store.cursor;

import im.infra.db.Transactions;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ReadState;
import im.topics.CursorRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
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
 * <p>The statements of a read ({@link #CHECK}, {@link #UPSERT}, {@link #UNREAD}) are public so
 * that the benchmark runs exactly them through pgbench as the floor.
 *
 * <p>A read that moves the cursor is published as a {@link CursorRecord.Read} through the
 * {@link CursorSink} before its transaction commits, like a delivered cursor.
 */
public final class ReadCursors {
    /**
     * The device's install (locked FOR SHARE until commit, as an ack's check does: a reinstall
     * waits), the head, the last seq the user may see (NULL if never a member) and the stored read
     * cursor.
     */
    public static final String CHECK =
            "SELECT d.install_epoch, d.credential, c.head_seq,"
            + " " + CursorService.visibleHead("d.user_id") + ","
            + " (SELECT r.read_seq FROM read_cursors r WHERE r.user_id = d.user_id AND r.conv_id = c.conv_id)"
            + " FROM devices d LEFT JOIN conversations c ON c.conv_id = ?"
            + " WHERE d.device_id = ? FOR SHARE OF d";

    public static final String UPSERT =
            "INSERT INTO read_cursors AS r (user_id, conv_id, read_seq) VALUES (?, ?, ?)"
            + " ON CONFLICT (user_id, conv_id) DO UPDATE SET read_seq = EXCLUDED.read_seq, updated_at = clock_timestamp()"
            + " WHERE r.read_seq < EXCLUDED.read_seq"
            + " RETURNING (extract(epoch FROM updated_at) * 1000)::bigint";

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

    /** The unread count of a read state. Parameters: conv, user, read cursor, the last seq the user may see. */
    public static final String UNREAD = "SELECT " + unreadVisible("r.conv", "r.usr", "r.rd", "r.hi")
            + " FROM (SELECT ?::text, ?::text, ?::bigint, ?::bigint) AS r(conv, usr, rd, hi)";

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

    /** The read state after a read, and whether the read moved the cursor (then it was published). */
    public record Marked(ReadState state, boolean moved) {}

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
        return Transactions.run(db, "read", c -> {
            long head;
            long visible;
            long stored;
            try (PreparedStatement ps = c.prepareStatement(CHECK)) {
                ps.setString(1, conv);
                ps.setString(2, who.deviceId());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next() || rs.getInt(1) != who.installEpoch()) {
                        throw new AckRejectedException(ErrorCode.STALE_INSTALL,
                                "device " + who.deviceId() + " was reinstalled; this install may not read");
                    }
                    if (rs.getLong(2) != who.credential()) throw new AckRejectedException(ErrorCode.BAD_TOKEN, DevicePrincipal.CREDENTIAL_SUPERSEDED);
                    head = rs.getLong(3);
                    visible = rs.getLong(4);
                    if (rs.wasNull()) throw new AckRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
                    stored = rs.getLong(5);
                }
            }
            if (seq > head) {
                // As for an ack: the event may be streamed a moment before its send is visible; wait for it.
                try (PreparedStatement ps = c.prepareStatement(CursorService.RECHECK)) {
                    ps.setString(1, who.userId());
                    ps.setString(2, conv);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        head = rs.getLong(1);
                        visible = rs.getLong(2);
                    }
                }
                if (seq > head) throw new AckRejectedException(ErrorCode.CURSOR_AHEAD, "seq=" + seq + " head=" + head);
            }
            long read = Math.max(stored, Math.min(seq, visible));
            boolean moved = false;
            if (read > stored) {
                try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
                    ps.setString(1, who.userId());
                    ps.setString(2, conv);
                    ps.setLong(3, read);
                    try (ResultSet rs = ps.executeQuery()) {
                        // Nothing returned: a concurrent read moved it further; the re-read below tells where.
                        moved = rs.next();
                        if (moved) sink.publish(List.of(new CursorRecord.Read(conv, who.userId(), read, rs.getLong(1))));
                        else read = storedRead(c, who.userId(), conv);
                    }
                }
            }
            return new Marked(new ReadState(read, unread(c, conv, who.userId(), read, visible), visible), moved);
        });
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

    private static long unread(Connection c, String conv, String user, long low, long high) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(UNREAD)) {
            ps.setString(1, conv);
            ps.setString(2, user);
            ps.setLong(3, low);
            ps.setLong(4, high);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
