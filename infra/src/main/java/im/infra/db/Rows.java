package im.infra.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Every row of one query, read into a list: the statement, its parameters and the result-set loop
 * written once, for queries whose rows map one to one onto values.
 */
public final class Rows {
    private Rows() {}

    /** Sets the query's parameters. */
    public interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    /** Reads the current row. */
    public interface Reader<T> {
        T read(ResultSet rs) throws SQLException;
    }

    /** Runs {@code sql} on {@code c} with the parameters {@code bind} sets and reads each row with {@code row}. */
    public static <T> List<T> list(Connection c, String sql, Binder bind, Reader<T> row) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                List<T> out = new ArrayList<>();
                while (rs.next()) out.add(row.read(rs));
                return out;
            }
        }
    }
}
