package im.read;

import im.protocol.ErrorCode;
import im.infra.db.DatabaseUnavailableException;
import im.infra.identity.DevicePrincipal;
import im.protocol.Event;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The read path: what a device is subscribed to ({@code sub}) and the pages of visible events it
 * fetches to repair gaps ({@code sync}). A member sees only events inside their visibility
 * periods (from their join event to their leave event, both included). Every read is refused
 * ({@code STALE_INSTALL}) for an install the device has left behind, checked in the snapshot the
 * read uses, so a reinstall that committed before the read is always seen.
 */
public final class ConversationReader {
    private static final String CONVERSATIONS =
            // a left conversation's head is the leave: a former member learns nothing after it
            "SELECT c.conv_id, LEAST(c.head_seq, COALESCE(m.to_seq, c.head_seq)), COALESCE(dc.delivered_seq, 0), m.from_seq,"
            + " m.to_seq IS NULL"
            + " FROM memberships m JOIN conversations c ON c.conv_id = m.conv_id"
            + " LEFT JOIN device_cursors dc ON dc.device_id = ? AND dc.conv_id = m.conv_id"
            + " WHERE m.user_id = ? AND (m.to_seq IS NULL"
            // a conversation the user left is listed until this device acknowledged its leave:
            // a device offline through the events it could see must still be able to catch up
            + "   OR (COALESCE(dc.delivered_seq, 0) < m.to_seq AND NOT EXISTS (SELECT 1 FROM memberships x"
            + "       WHERE x.conv_id = m.conv_id AND x.user_id = m.user_id AND x.from_seq > m.from_seq)))"
            + " ORDER BY c.conv_id";

    /**
     * The head the reader may know (a former member's is its last leave) and whether it ever was a
     * member; no row if the conversation does not exist.
     */
    private static final String ACCESS =
            "SELECT CASE WHEN bool_or(m.to_seq IS NULL) THEN c.head_seq ELSE max(m.to_seq) END, count(m.user_id) > 0"
            + " FROM conversations c LEFT JOIN memberships m ON m.conv_id = c.conv_id AND m.user_id = ?"
            + " WHERE c.conv_id = ? GROUP BY c.conv_id, c.head_seq";

    private static final String PAGE =
            // users_count, never users: a device reading the log gets a bulk join as one compact
            // event, not the roster it added (docs/protocol.md).
            "SELECT e.seq, e.kind, e.mid, e.sender, e.cmid, e.body, e.created_at, COALESCE(e.users_count, 0) FROM events e"
            + " WHERE e.conv_id = ? AND e.seq > ? AND e.seq <= ?"
            + " AND EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = e.conv_id AND m.user_id = ?"
            + "             AND e.seq >= m.from_seq AND (m.to_seq IS NULL OR e.seq <= m.to_seq))"
            + " ORDER BY e.seq LIMIT ?";

    /**
     * One statement, so one snapshot: the head, whether the reader is a current member, and the
     * cursor of every device of every current member (cursors of an older install are ignored).
     */
    private static final String DELIVERY =
            "SELECT c.head_seq, me.ok, d.user_id, d.device_id, COALESCE(dc.delivered_seq, 0)"
            + " FROM conversations c"
            + " CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM memberships x"
            + "     WHERE x.conv_id = c.conv_id AND x.user_id = ? AND x.to_seq IS NULL)) me(ok)"
            + " LEFT JOIN memberships m ON me.ok AND m.conv_id = c.conv_id AND m.to_seq IS NULL"
            + " LEFT JOIN devices d ON d.user_id = m.user_id"
            + " LEFT JOIN device_cursors dc ON dc.device_id = d.device_id AND dc.conv_id = c.conv_id"
            + "     AND dc.install_epoch = d.install_epoch"
            + " WHERE c.conv_id = ? ORDER BY d.user_id, d.device_id";

    private static final String INSTALL = "SELECT install_epoch, credential FROM devices WHERE device_id = ?";

    private final DataSource db;

    public ConversationReader(DataSource db) {
        this.db = db;
    }

    /**
     * The user's current conversations with head and this device's cursor, and the conversations
     * the user left whose leave event this device has not acknowledged yet.
     */
    public List<ConvCursor> conversations(DevicePrincipal who) {
        try (Connection c = db.getConnection()) {
            beginSnapshot(c);
            try (PreparedStatement ps = c.prepareStatement(CONVERSATIONS)) {
                requireInstall(c, who);
                ps.setString(1, who.deviceId());
                ps.setString(2, who.userId());
                List<ConvCursor> out = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) out.add(new ConvCursor(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getBoolean(5)));
                }
                return out;
            } finally {
                endSnapshot(c);
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify("sub", e);
        }
    }

    /**
     * The delivered cursor of every device of the conversation's current members, for a reader
     * who is a current member ({@code NOT_MEMBER} otherwise, {@code UNKNOWN_CONV} if it does not exist).
     */
    public DeliveryState delivery(DevicePrincipal who, String conv) {
        try (Connection c = db.getConnection()) {
            beginSnapshot(c);
            try (PreparedStatement ps = c.prepareStatement(DELIVERY)) {
                requireInstall(c, who);
                ps.setString(1, who.userId());
                ps.setString(2, conv);
                long head = -1;
                List<DeliveryState.Device> devices = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        if (!rs.getBoolean(2)) throw new ReadRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
                        head = rs.getLong(1);
                        if (rs.getString(4) != null) devices.add(new DeliveryState.Device(rs.getString(3), rs.getString(4), rs.getLong(5)));
                    }
                }
                if (head < 0) throw new ReadRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv);
                return new DeliveryState(conv, head, devices);
            } finally {
                endSnapshot(c);
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify("delivery state", e);
        }
    }

    /** Rows the page query fetches per round trip (a cursor: the page runs in a transaction). */
    private static final int FETCH_ROWS = 64;

    /**
     * An upper estimate of an event's bytes in a frame: its text fields plus the JSON around them
     * (an event whose body is all control characters escapes to more; the estimate bounds pages, not sockets).
     */
    static long frameBytes(Event e) {
        long n = 160;   // field names, seqs, timestamps, punctuation
        for (String f : new String[] {e.kind(), e.mid(), e.sender(), e.cmid(), e.body()}) {
            if (f != null) n += f.length();
        }
        return n + e.conv().length();
    }

    /**
     * Up to {@code limit} visible events with seq greater than {@code after}, in seq order, and the
     * head, all from one snapshot: pages never repeat or skip an event while new ones arrive,
     * because seqs commit in order (the conversation row lock is held until commit).
     */
    public SyncPage sync(DevicePrincipal who, String conv, long after, int limit) {
        return sync(who, conv, after, limit, Long.MAX_VALUE);
    }

    /**
     * As {@link #sync(DevicePrincipal, String, long, int)}, and the page also ends ({@code more})
     * before its events' estimated frame bytes ({@link #frameBytes}) pass {@code maxBytes}; it holds
     * at least one event, whatever its size, so that paging always moves on.
     */
    public SyncPage sync(DevicePrincipal who, String conv, long after, int limit, long maxBytes) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            c.setReadOnly(true);
            try {
                requireInstall(c, who);
                long head;
                try (PreparedStatement ps = c.prepareStatement(ACCESS)) {
                    ps.setString(1, who.userId());
                    ps.setString(2, conv);
                    try (ResultSet rs = ps.executeQuery()) {
                        if (!rs.next()) throw new ReadRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv);
                        if (!rs.getBoolean(2)) throw new ReadRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
                        head = rs.getLong(1);
                    }
                }
                List<Event> events = new ArrayList<>();
                boolean more = false;
                long bytes = 0;
                try (PreparedStatement ps = c.prepareStatement(PAGE)) {
                    ps.setFetchSize(FETCH_ROWS);   // a page cut short by bytes does not pull all its rows
                    ps.setString(1, conv);
                    ps.setLong(2, after);
                    ps.setLong(3, head);
                    ps.setString(4, who.userId());
                    ps.setInt(5, limit + 1);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            if (events.size() == limit) {
                                more = true;
                                break;
                            }
                            Event e = new Event(conv, rs.getLong(1), rs.getString(2), rs.getString(3),
                                    rs.getString(4), rs.getString(5), rs.getString(6),
                                    rs.getTimestamp(7).getTime(), rs.getInt(8));
                            bytes += frameBytes(e);
                            if (!events.isEmpty() && bytes > maxBytes) {
                                more = true;
                                break;
                            }
                            events.add(e);
                        }
                    }
                }
                c.commit();
                return new SyncPage(conv, events, more, head);
            } finally {
                if (!c.getAutoCommit()) c.rollback();
                c.setReadOnly(false);
                c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify("sync", e);
        }
    }

    /** A read-only REPEATABLE READ transaction: the install check and the read see one snapshot. */
    private static void beginSnapshot(Connection c) throws SQLException {
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        c.setReadOnly(true);
    }

    /** Ends {@link #beginSnapshot} (a read-only transaction has nothing to commit) and restores the pool's defaults. */
    private static void endSnapshot(Connection c) throws SQLException {
        c.rollback();
        c.setReadOnly(false);
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        c.setAutoCommit(true);
    }

    /**
     * Refuses a reader whose install the device has left behind (reinstalled, or the device is
     * gone), or whose token was renewed or revoked since the session authenticated.
     */
    private static void requireInstall(Connection c, DevicePrincipal who) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(INSTALL)) {
            ps.setString(1, who.deviceId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getInt(1) != who.installEpoch()) {
                    throw new ReadRejectedException(ErrorCode.STALE_INSTALL,
                            "device " + who.deviceId() + " was reinstalled; install " + who.installEpoch() + " may not read");
                }
                if (rs.getLong(2) != who.credential()) throw new ReadRejectedException(ErrorCode.BAD_TOKEN, DevicePrincipal.CREDENTIAL_SUPERSEDED);
            }
        }
    }
}
