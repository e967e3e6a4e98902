package im.relay;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import org.postgresql.core.BaseConnection;
import org.postgresql.util.HostSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's lock session: a PostgreSQL connection of its own on which an instance takes the
 * slot's advisory lock, with {@code idle_session_timeout} set so that the server ends a silent
 * (frozen) holder's session, and the lock with it ({@link CdcRelay} has the whole protocol).
 */
final class LockSession {
    private static final Logger log = LoggerFactory.getLogger(LockSession.class);

    private LockSession() {}

    /**
     * A session of its own for the lock. idle_session_timeout is set before the lock is taken, so
     * no moment exists in which this session holds the lock without the server's deadline.
     */
    static Connection open(RelayConfig cfg) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", cfg.user());
        p.setProperty("password", cfg.password());
        p.setProperty("ApplicationName", "im-relay-lock-" + cfg.slot());
        // A heartbeat to an unreachable server fails rather than blocking for ever (the lease fences
        // publishing meanwhile); 2 T leaves room for takeOverSlot, which waits up to T.
        p.setProperty("socketTimeout", String.valueOf(Math.max(2, 2 * cfg.lockTimeout().toSeconds())));
        p.setProperty("connectTimeout", String.valueOf(Math.max(1, cfg.lockTimeout().toSeconds())));
        Connection c = DriverManager.getConnection(cfg.jdbcUrl(), p);
        try (Statement st = c.createStatement()) {
            st.execute("SET idle_session_timeout = " + cfg.lockTimeout().toMillis());
        } catch (SQLException e) {
            c.close();
            throw new SQLException("cannot set idle_session_timeout on the relay's lock session (PostgreSQL 14+ needed): "
                    + e.getMessage(), e.getSQLState(), e);
        }
        return c;
    }

    /** The server {@code c} is connected to (of a multi-host URL, the one that answered as primary). */
    static HostSpec server(Connection c) throws SQLException {
        return c.unwrap(BaseConnection.class).getQueryExecutor().getHostSpec();
    }

    /** Takes the slot's advisory lock on this session if free; false when another session holds it. */
    static boolean tryLock(Connection c, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(hashtext(?))")) {
            ps.setString(1, "im-relay:" + slot);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /**
     * Terminates the walsender that still streams this slot, if any: we hold the lock, so it
     * belongs to a former holder that froze or died (it would keep the slot until
     * wal_sender_timeout, and the engine could not start). Waits for it to exit.
     */
    static void takeOverSlot(Connection lock, RelayConfig cfg) throws SQLException {
        try (PreparedStatement ps = lock.prepareStatement(
                "SELECT active_pid, pg_terminate_backend(active_pid, ?) FROM pg_replication_slots"
                        + " WHERE slot_name = ? AND active_pid IS NOT NULL")) {
            ps.setLong(1, cfg.lockTimeout().toMillis());
            ps.setString(2, cfg.slot());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(2)) {
                        log.warn("slot {} was still streamed by backend {} of a former holder; terminated it",
                                cfg.slot(), rs.getInt(1));
                    } else {
                        log.warn("slot {}: backend {} of a former holder did not exit within {} ms",
                                cfg.slot(), rs.getInt(1), cfg.lockTimeout().toMillis());
                    }
                }
            }
        }
    }
}
