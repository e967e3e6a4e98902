package im.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/** Plain reads of the stack's database by the harness (never by the system under test). */
final class StackDb {
    interface RowHandler {
        void row(ResultSet rs) throws SQLException;
    }

    private final DataSource db;

    StackDb(DataSource db) {
        this.db = db;
    }

    void query(String sql, RowHandler h) throws SQLException {
        try (Connection c = db.getConnection();
             PreparedStatement ps = c.prepareStatement(sql);
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) h.row(rs);
        }
    }

    Map<String, Long> heads() throws SQLException {
        Map<String, Long> m = new TreeMap<>();
        query("SELECT conv_id, head_seq FROM conversations", rs -> m.put(rs.getString(1), rs.getLong(2)));
        return m;
    }
}
