package im.infra.db;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * PostgreSQL could not be reached or went away mid-request. Retriable: the request may or may not
 * have committed, and the client resends with the same key (cmid), which makes that safe.
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

    /** Wraps a failure as unavailable when it is one, else as a fatal internal error. */
    public static RuntimeException classify(String what, SQLException e) {
        if (isUnavailable(e)) return new DatabaseUnavailableException(what + ": database unavailable", e);
        return new IllegalStateException(what + ": " + e.getMessage(), e);
    }
}
