package im.infra.db;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** The platform's transaction bracket: commit on return, roll back on any exception, classify SQL failures. */
public final class Transactions {
    /** Work inside one transaction. */
    public interface Body<T> {
        T run(Connection c) throws SQLException;
    }

    private Transactions() {}

    /**
     * Runs {@code body} in one transaction on a pooled connection and commits. Any exception rolls
     * back; an {@link SQLException} comes out as {@link DatabaseUnavailableException#classify}
     * names it ({@code what} says which operation), a RuntimeException unchanged.
     */
    public static <T> T run(DataSource db, String what, Body<T> body) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                T r = body.run(c);
                c.commit();
                return r;
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c, e);
                throw e;
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify(what, e);
        }
    }

    /** Rolls back; a failure to do so is attached to {@code cause} (the connection is gone, PostgreSQL rolls back on its own). */
    public static void rollbackQuietly(Connection c, Exception cause) {
        try {
            c.rollback();
        } catch (SQLException e) {
            cause.addSuppressed(e);
        }
    }
}
