package im.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * Reads conversation histories from PostgreSQL's {@code events} table, the source of truth, in
 * the shape of the topic's records. {@code at} is {@code created_at} truncated to milliseconds,
 * exactly as the relay computes it. {@code recalled_by} is read too: a recall empties its message's
 * row (and its edits') without publishing anything, so the topic keeps the original body.
 */
public final class PostgresHistory {
    private static final String COLUMNS =
            "SELECT conv_id, seq, kind, mid::text AS mid, sender, sender_device, cmid, body, created_at, users,"
            + " coalesce(ref_seq, 0) AS ref_seq, coalesce(recalled_by, 0) AS recalled_by FROM events";

    private PostgresHistory() {
    }

    /** Every event of one conversation, or of all conversations when {@code conv} is null. */
    public static Map<String, NavigableMap<Long, Event>> load(Connection c, String conv) throws SQLException {
        String sql = conv == null
                ? COLUMNS + " ORDER BY conv_id, seq"
                : COLUMNS + " WHERE conv_id = ? ORDER BY seq";
        try (PreparedStatement st = c.prepareStatement(sql)) {
            if (conv != null) st.setString(1, conv);
            return read(st);
        }
    }

    /** The events of {@code conv} with a seq above {@code afterSeq}: those committed since a first load. */
    public static NavigableMap<Long, Event> loadAfter(Connection c, String conv, long afterSeq) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(COLUMNS + " WHERE conv_id = ? AND seq > ? ORDER BY seq")) {
            st.setString(1, conv);
            st.setLong(2, afterSeq);
            return read(st).getOrDefault(conv, new TreeMap<>());
        }
    }

    /** A bulk join's users (text[]), or null. */
    private static java.util.List<String> users(java.sql.Array a) throws SQLException {
        return a == null ? null : java.util.List.of((String[]) a.getArray());
    }

    private static Map<String, NavigableMap<Long, Event>> read(PreparedStatement st) throws SQLException {
        // With autocommit off, pgjdbc streams the rows in batches of the fetch size instead of
        // loading the whole result at once.
        boolean autoCommit = st.getConnection().getAutoCommit();
        st.getConnection().setAutoCommit(false);
        st.setFetchSize(1000);
        Map<String, NavigableMap<Long, Event>> out = new TreeMap<>();
        try (ResultSet rs = st.executeQuery()) {
            while (rs.next()) {
                Event e = new Event(rs.getString("conv_id"), rs.getLong("seq"), rs.getString("kind"),
                        rs.getString("mid"), rs.getString("sender"), rs.getString("sender_device"),
                        rs.getString("cmid"), rs.getString("body"),
                        rs.getObject("created_at", OffsetDateTime.class).toInstant().toEpochMilli(), users(rs.getArray("users")),
                        rs.getLong("ref_seq"), rs.getLong("recalled_by"));
                out.computeIfAbsent(e.conv(), k -> new TreeMap<>()).put(e.seq(), e);
            }
        } finally {
            st.getConnection().commit();
            st.getConnection().setAutoCommit(autoCommit);
        }
        return out;
    }
}
