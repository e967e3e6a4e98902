package im.infra.db;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The platform's transaction bracket: commit on return, roll back on any exception, classify SQL
 * failures. A transaction that PostgreSQL aborted only because of a concurrent one (deadlock,
 * serialization failure) is run again, a bounded number of times.
 */
public final class Transactions {
    /** Runs of one body at most: the first and two more after a deadlock or serialization failure. */
    public static final int MAX_ATTEMPTS = 3;

    /** Work inside one transaction. */
    public interface Body<T> {
        T run(Connection c) throws SQLException;
    }

    private Transactions() {}

    /**
     * Runs {@code body} in one transaction on a pooled connection and commits. Any exception rolls
     * back; an {@link SQLException} comes out as {@link DatabaseUnavailableException#classify}
     * names it ({@code what} says which operation), a RuntimeException unchanged. A deadlock or
     * serialization failure runs the body again after a short random pause, at most
     * {@link #MAX_ATTEMPTS} times in all, so the body must do nothing but database work and work
     * that is safe to repeat (the cursor service publishes records that consumers deduplicate).
     */
    public static <T> T run(DataSource db, String what, Body<T> body) {
        for (int attempt = 1; ; attempt++) {
            try {
                return once(db, body);
            } catch (SQLException e) {
                if (attempt < MAX_ATTEMPTS && DatabaseUnavailableException.isTransientConflict(e)) {
                    // jitter so that the transactions that collided do not collide again in step
                    LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(1_000_000, 10_000_000L * attempt));
                    continue;
                }
                throw DatabaseUnavailableException.classify(what, e);
            }
        }
    }

    private static <T> T once(DataSource db, Body<T> body) throws SQLException {
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
