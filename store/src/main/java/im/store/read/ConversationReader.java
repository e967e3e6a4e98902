package im.store.read;

import im.protocol.ErrorCode;
import im.infra.db.DatabaseUnavailableException;
import im.infra.identity.DevicePrincipal;
import im.protocol.CatchUpPosition;
import im.protocol.CaughtUpRange;
import im.protocol.Event;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The read path: what a device is subscribed to ({@code sub}, in pages), the pages of visible events it
 * fetches to repair gaps ({@code sync}) and those it has not acknowledged across all its conversations
 * ({@code catchup}). A member sees only events inside their visibility
 * periods (from their join event to their leave event, both included). Every read is refused
 * ({@code STALE_INSTALL}) for an install the device has left behind, checked in the snapshot the
 * read uses, so a reinstall that committed before the read is always seen.
 */
public final class ConversationReader {
    /**
     * One page of {@code sub}, by keyset over memberships_by_user (user_id, conv_id): the head and the
     * cursor are subqueries per listed membership (not joins, which the planner would hash over all
     * of the user's conversations), so a page reads O(page) rows whatever the user's conversation count.
     */
    static final String CONVERSATIONS =
            // a left conversation's head is the leave: a former member learns nothing after it
            "SELECT v.conv_id, LEAST(v.head, COALESCE(v.to_seq, v.head)), v.delivered, v.from_seq, v.to_seq IS NULL FROM ("
            + " SELECT m.conv_id, m.user_id, m.from_seq, m.to_seq,"
            + "   (SELECT c.head_seq FROM conversations c WHERE c.conv_id = m.conv_id) AS head,"
            + "   COALESCE((SELECT dc.delivered_seq FROM device_cursors dc WHERE dc.device_id = ? AND dc.conv_id = m.conv_id), 0) AS delivered"
            + " FROM memberships m WHERE m.user_id = ? AND m.conv_id > ?) v"
            + " WHERE v.to_seq IS NULL"
            // a conversation the user left is listed until this device acknowledged its leave:
            // a device offline through the events it could see must still be able to catch up
            + "   OR (v.delivered < v.to_seq AND NOT EXISTS (SELECT 1 FROM memberships x"
            + "       WHERE x.conv_id = v.conv_id AND x.user_id = v.user_id AND x.from_seq > v.from_seq))"
            + " ORDER BY v.conv_id LIMIT ?";

    /**
     * The conversations in which this device is behind what its user may see, from {@code conv >= ?}
     * in conv order, at most {@code ?} of them: the user's latest period of each (a current one is
     * always the latest), its visible head and the device's cursor. Subqueries per membership, as in
     * {@link #CONVERSATIONS}: a page reads the memberships it passes, not all of the user's.
     */
    static final String BEHIND =
            "SELECT v.conv_id, v.head, v.delivered FROM (SELECT m.conv_id,"
            + "   CASE WHEN m.to_seq IS NULL THEN (SELECT c.head_seq FROM conversations c WHERE c.conv_id = m.conv_id) ELSE m.to_seq END AS head,"
            + "   COALESCE((SELECT dc.delivered_seq FROM device_cursors dc WHERE dc.device_id = ? AND dc.conv_id = m.conv_id), 0) AS delivered"
            + " FROM memberships m WHERE m.user_id = ? AND m.conv_id >= ?"
            + "   AND (m.to_seq IS NULL OR NOT EXISTS (SELECT 1 FROM memberships x"
            + "       WHERE x.conv_id = m.conv_id AND x.user_id = m.user_id AND x.from_seq > m.from_seq))) v"
            + " WHERE v.delivered < v.head ORDER BY v.conv_id LIMIT ?";

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
            // A recalled message or edit has an empty body (migration V10) and is marked recalled.
            "SELECT e.seq, e.kind, e.mid, e.sender, e.cmid, e.body, e.created_at, COALESCE(e.users_count, 0),"
            + " COALESCE(e.ref_seq, 0), e.recalled_by IS NOT NULL FROM events e"
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
     * the user left whose leave event this device has not acknowledged yet; one page of them: at
     * most {@code limit} whose id comes after {@code after} ({@code ""}: from the first) in the
     * database's order of ids, read through an index, so a page costs its own size.
     */
    public ConvPage conversations(DevicePrincipal who, String after, int limit) {
        try (Connection c = db.getConnection()) {
            beginSnapshot(c);
            try (PreparedStatement ps = c.prepareStatement(CONVERSATIONS)) {
                requireInstall(c, who);
                ps.setString(1, who.deviceId());
                ps.setString(2, who.userId());
                ps.setString(3, after);
                ps.setInt(4, limit + 1);
                List<ConvCursor> out = new ArrayList<>();
                boolean more = false;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        if (out.size() == limit) {
                            more = true;
                            break;
                        }
                        out.add(new ConvCursor(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getBoolean(5)));
                    }
                }
                return new ConvPage(out, more);
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

    /** An upper estimate of the bytes of one {@code {conv, after, upTo}} entry of a caughtup frame, besides its conv. */
    private static final int RANGE_BYTES = 64;

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
                boolean more = readVisible(c, who, conv, after, head, limit, new long[] {maxBytes}, events);
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

    /**
     * Appends to {@code out} the events of {@code conv} visible to {@code who} in ({@code after},
     * {@code head}], in seq order, while {@code out} holds fewer than {@code limit} and their
     * estimated bytes stay within {@code bytesLeft[0]} (decreased by what is added); the first event
     * of {@code out} is always taken. True if a visible event was left out.
     */
    private static boolean readVisible(Connection c, DevicePrincipal who, String conv, long after, long head, int limit,
                                       long[] bytesLeft, List<Event> out) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(PAGE)) {
            ps.setFetchSize(FETCH_ROWS);   // a page cut short by bytes does not pull all its rows
            ps.setString(1, conv);
            ps.setLong(2, after);
            ps.setLong(3, head);
            ps.setString(4, who.userId());
            ps.setInt(5, limit - out.size() + 1);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (out.size() == limit) return true;
                    Event e = new Event(conv, rs.getLong(1), rs.getString(2), rs.getString(3),
                            rs.getString(4), rs.getString(5), rs.getString(6),
                            rs.getTimestamp(7).getTime(), rs.getInt(8), rs.getLong(9), rs.getBoolean(10));
                    long n = frameBytes(e);
                    if (!out.isEmpty() && n > bytesLeft[0]) return true;
                    bytesLeft[0] -= n;
                    out.add(e);
                }
            }
        }
        return false;
    }

    /**
     * One page of what this device has not acknowledged, across every conversation of its user:
     * for each conversation where the device's cursor is below the head the user may see (a former
     * member's is its leave), the visible events above the cursor, in (conversation, seq) order, from
     * just after {@code after} ({@code null}: the start), at most {@code limit} of them and, past the
     * first, within {@code maxBytes} of estimated frame bytes ({@link #frameBytes}), as a
     * {@code sync} page is. One snapshot. The position it resumes from is the caller's, not the
     * cursors': a page that was not acknowledged yet is never read twice by the next one.
     */
    public CatchUpPage catchUp(DevicePrincipal who, CatchUpPosition after, int limit, long maxBytes) {
        try (Connection c = db.getConnection()) {
            beginSnapshot(c);
            try {
                requireInstall(c, who);
                List<Event> events = new ArrayList<>();
                List<CaughtUpRange> ranges = new ArrayList<>();
                boolean more = false;
                long[] bytesLeft = {maxBytes};
                // every conversation behind holds a visible event above the cursor (its head at least),
                // so a page needs at most limit of them, the one it resumes in, and one to tell more
                int rowLimit = limit + 2;
                int rows = 0;
                try (PreparedStatement ps = c.prepareStatement(BEHIND)) {
                    ps.setFetchSize(FETCH_ROWS);   // streamed: a page reads the conversations it covers, not all of them
                    ps.setString(1, who.deviceId());
                    ps.setString(2, who.userId());
                    ps.setString(3, after == null ? "" : after.conv());
                    ps.setInt(4, rowLimit);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            rows++;
                            String conv = rs.getString(1);
                            long head = rs.getLong(2);
                            long from = rs.getLong(3);
                            if (after != null && conv.equals(after.conv())) from = Math.max(from, after.seq());
                            if (from >= head) continue;   // the previous page ended at this conversation's head
                            if (events.size() == limit || (!events.isEmpty() && bytesLeft[0] <= 0)) {
                                more = true;
                                break;
                            }
                            int before = events.size();
                            bytesLeft[0] -= RANGE_BYTES + conv.length();   // the page's {conv, after, upTo} of it
                            if (readVisible(c, who, conv, from, head, limit, bytesLeft, events)) {
                                more = true;
                                // cut inside this conversation: the page covers it up to its last event
                                if (events.size() > before) ranges.add(new CaughtUpRange(conv, from, events.get(events.size() - 1).seq()));
                                break;
                            }
                            ranges.add(new CaughtUpRange(conv, from, head));   // all of it up to its head
                        }
                    }
                }
                if (rows == rowLimit && !more && !events.isEmpty()) more = true;   // conversations may follow the rows read
                Event last = events.isEmpty() ? null : events.get(events.size() - 1);
                return new CatchUpPage(events, ranges, more, more ? new CatchUpPosition(last.conv(), last.seq()) : null);
            } finally {
                endSnapshot(c);
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify("catchup", e);
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
