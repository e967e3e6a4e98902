package im.infra.db;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * PostgreSQL could not be reached or went away mid-request, or aborted the transaction to resolve a
 * conflict with a concurrent one (deadlock, serialization failure) more often than
 * {@link Transactions} retries it. Retriable: the request may or may not have committed, and the
 * client resends with the same key (cmid), which makes that safe.
 */
public final class DatabaseUnavailableException extends RuntimeException {
    public DatabaseUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    /** True for connection failures, server shutdown/crash and pool timeouts. */
    public static boolean isUnavailable(SQLException e) {
        if (e instanceof SQLTransientConnectionException) return true;
        String state = e.getSQLState();
        if (state == null) return e.getCause() instanceof java.io.IOException;
        return state.startsWith("08")           // connection exception
                || state.startsWith("57P")      // admin/crash shutdown, cannot connect now
                || state.equals("53300")        // too many connections
                || state.startsWith("58");      // system error (I/O)
    }

    /**
     * True when PostgreSQL aborted the transaction only because of concurrent ones: a deadlock
     * (40P01) or a serialization failure (40001). Nothing was written; the same transaction run
     * again may succeed.
     */
    public static boolean isTransientConflict(SQLException e) {
        String state = e.getSQLState();
        return "40P01".equals(state) || "40001".equals(state);
    }

    /** Wraps a failure as unavailable when it is one (or a transient conflict), else as a fatal internal error. */
    public static RuntimeException classify(String what, SQLException e) {
        if (isUnavailable(e)) return new DatabaseUnavailableException(what + ": database unavailable", e);
        if (isTransientConflict(e)) return new DatabaseUnavailableException(what + ": aborted by a concurrent transaction", e);
        return new IllegalStateException(what + ": " + e.getMessage(), e);
    }
}
