package im.store.directory;

import im.infra.db.Rows;
import im.infra.db.Transactions;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The directory's read-only listings for operators (the admin API, {@code im admin}): users,
 * a user's devices, conversations, and a conversation's cursors against its head. Pages are
 * ordered by id and continue after the last id of the previous page.
 */
public final class DirectoryListing {
    private final DataSource db;

    public DirectoryListing(DataSource db) {
        this.db = db;
    }

    /** The most items one listing page returns. */
    public static final int MAX_PAGE = 1000;

    /** Users ordered by id with id &gt; {@code after} (null: from the first), at most {@code limit}. */
    public Page<UserSummary> listUsers(String after, int limit) {
        return listPage("list users", after, limit,
                "SELECT u.user_id, u.display_name, (SELECT count(*) FROM devices d WHERE d.user_id = u.user_id)"
                + " FROM users u WHERE u.user_id > ? ORDER BY u.user_id LIMIT ?",
                rs -> new UserSummary(rs.getString(1), rs.getString(2), rs.getInt(3)), UserSummary::user);
    }

    /** The devices of a user, ordered by id; {@code NOT_FOUND} for an unknown user. */
    public List<DeviceSummary> devices(String user) {
        Directory.checkId("user", user);
        return Transactions.run(db, "list devices", c -> {
            Directory.requireUser(c, user);
            return Rows.list(c,
                    "SELECT device_id, install_epoch, created_at, updated_at, token_expires_at FROM devices WHERE user_id = ? ORDER BY device_id",
                    ps -> ps.setString(1, user), rs -> {
                        java.sql.Timestamp expires = rs.getTimestamp(5);
                        return new DeviceSummary(user, rs.getString(1), rs.getInt(2),
                                rs.getTimestamp(3).getTime(), rs.getTimestamp(4).getTime(),
                                expires == null ? null : expires.getTime());
                    });
        });
    }

    /** Conversations ordered by id with id &gt; {@code after} (null: from the first), at most {@code limit}. */
    public Page<ConversationSummary> listConversations(String after, int limit) {
        return listPage("list conversations", after, limit,
                "SELECT c.conv_id, c.kind, c.head_seq,"
                + " (SELECT count(*) FROM memberships m WHERE m.conv_id = c.conv_id AND m.to_seq IS NULL)"
                + " FROM conversations c WHERE c.conv_id > ? ORDER BY c.conv_id LIMIT ?",
                rs -> new ConversationSummary(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getInt(4)), ConversationSummary::conv);
    }

    /**
     * The head and, for every device of every user who is or was a member, the delivered cursor
     * (of the device's current install) against the last seq that user can see. One statement, so
     * one snapshot: a cursor is never compared with a head read at another time.
     */
    public ConversationCursors cursors(String conv) {
        Directory.checkId("conv", conv);
        return Transactions.run(db, "read cursors", c -> {
            long head = -1;
            List<DeviceCursor> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT c.head_seq, d.user_id, d.device_id, bool_or(m.to_seq IS NULL),"
                    + " max(COALESCE(m.to_seq, c.head_seq)), COALESCE(dc.delivered_seq, 0), dc.updated_at"
                    + " FROM conversations c"
                    + " LEFT JOIN memberships m ON m.conv_id = c.conv_id"
                    + " LEFT JOIN devices d ON d.user_id = m.user_id"
                    + " LEFT JOIN device_cursors dc ON dc.device_id = d.device_id AND dc.conv_id = c.conv_id"
                    + "     AND dc.install_epoch = d.install_epoch"
                    + " WHERE c.conv_id = ?"
                    + " GROUP BY c.head_seq, d.user_id, d.device_id, dc.delivered_seq, dc.updated_at"
                    + " ORDER BY d.user_id, d.device_id")) {
                ps.setString(1, conv);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        head = rs.getLong(1);
                        if (rs.getString(3) == null) continue;   // a member without devices
                        out.add(deviceCursor(rs));
                    }
                }
            }
            if (head < 0) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no conversation " + conv);
            return new ConversationCursors(conv, head, out);
        });
    }

    /**
     * The {@code top} devices furthest behind, over every conversation: every device of every user
     * who is or was a member, with lag &gt; 0, ordered by lag (then conversation and device). One
     * statement, one snapshot; it reads every membership with its users' devices and cursors (a
     * scan, sorted top-N in bounded memory), so it is an operator's query, not one to poll often.
     */
    public List<LaggingDevice> mostLagging(int top) {
        if (top < 1 || top > MAX_PAGE) throw Directory.invalid("top: must be from 1 to " + MAX_PAGE);
        return Transactions.run(db, "most lagging", c -> Rows.list(c,
                "SELECT q.conv_id, q.user_id, q.device_id, q.member, q.visible, q.delivered, q.updated_at,"
                + " (SELECT (extract(epoch FROM clock_timestamp() - e.created_at) * 1000)::bigint FROM events e"
                + "   WHERE e.conv_id = q.conv_id AND e.seq = q.delivered + 1)"
                + " FROM (SELECT m.conv_id, d.user_id, d.device_id, bool_or(m.to_seq IS NULL) AS member,"
                + "   max(COALESCE(m.to_seq, c.head_seq)) AS visible, COALESCE(dc.delivered_seq, 0) AS delivered, dc.updated_at"
                + "   FROM memberships m"
                + "   JOIN conversations c ON c.conv_id = m.conv_id"
                + "   JOIN devices d ON d.user_id = m.user_id"
                + "   LEFT JOIN device_cursors dc ON dc.device_id = d.device_id AND dc.conv_id = m.conv_id"
                + "       AND dc.install_epoch = d.install_epoch"
                + "   GROUP BY m.conv_id, d.user_id, d.device_id, dc.delivered_seq, dc.updated_at"
                + "   HAVING max(COALESCE(m.to_seq, c.head_seq)) > COALESCE(dc.delivered_seq, 0)"
                + "   ORDER BY max(COALESCE(m.to_seq, c.head_seq)) - COALESCE(dc.delivered_seq, 0) DESC, m.conv_id, d.device_id"
                + "   LIMIT ?) q"
                + " ORDER BY q.visible - q.delivered DESC, q.conv_id, q.device_id",
                ps -> ps.setInt(1, top),
                rs -> new LaggingDevice(rs.getString(1), deviceCursor(rs), Math.max(0, rs.getLong(8)))));
    }

    /** Columns 2-7 of a cursor row: user, device, member now, visible head, delivered, updated_at. */
    private static DeviceCursor deviceCursor(ResultSet rs) throws SQLException {
        java.sql.Timestamp updated = rs.getTimestamp(7);
        return new DeviceCursor(rs.getString(2), rs.getString(3), rs.getBoolean(4), rs.getLong(5), rs.getLong(6),
                updated == null ? null : updated.getTime());
    }

    /**
     * One page of a listing: {@code sql} takes the id to start after and a row limit, and lists ids
     * in order; one row more than {@code limit} is read, only to tell that another page exists.
     */
    private <T> Page<T> listPage(String what, String after, int limit, String sql, Rows.Reader<T> row, Function<T, String> id) {
        if (after != null) Directory.checkId("after", after);
        if (limit < 1 || limit > MAX_PAGE) throw Directory.invalid("limit: must be from 1 to " + MAX_PAGE);
        return Transactions.run(db, what, c -> {
            List<T> rows = Rows.list(c, sql, ps -> {
                ps.setString(1, after == null ? "" : after);
                ps.setInt(2, limit + 1);
            }, row);
            if (rows.size() <= limit) return new Page<>(rows, null);
            List<T> items = rows.subList(0, limit);
            return new Page<>(items, id.apply(items.get(limit - 1)));
        });
    }
}
