package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the sessions whose credentials ended: a connection of an install the device has left
 * behind is closed with {@code STALE_INSTALL} (status 4003), one whose token was renewed or
 * revoked with {@code BAD_TOKEN} (4001). (An expiring token is closed by its connection's own
 * timer, see {@link DeviceConnection#endAt}.) A reinstall, a renewal and a revocation each set
 * the device's {@code updated_at} (the database clock at the update) in the same transaction.
 * Every {@code interval} the watch reads the devices updated since its previous pass (an indexed
 * range, minus {@link #LOOKBACK} for transactions that committed after a later one) and closes
 * the held connections whose install epoch or credential number ({@code devices.credential}, the
 * one every request compares too) is no longer the device's: a pass costs
 * O(changes), and a change committed on any gateway reaches this gateway's sockets within one
 * interval plus one query. Every {@link #FULL_EVERY}th pass, and the first, also reads the
 * credentials of every held device (one query per {@link #CHUNK}): the net for a transaction that
 * ran longer than the look-back, so that nothing relies on commit timing. Polling the database
 * (rather than a notice on Kafka) cannot lose a change and works without Kafka.
 */
final class CredentialWatch implements AutoCloseable {
    /** Devices per query of a full pass, so that one statement stays small on a gateway with many connections. */
    static final int CHUNK = 5_000;
    /** Every this many passes, one reads every held device's credentials (about once a minute at the default interval). */
    static final int FULL_EVERY = 60;
    /** Changes are read from this long before the previous pass's database time. */
    static final Duration LOOKBACK = Duration.ofSeconds(10);
    private static final Logger log = LoggerFactory.getLogger(CredentialWatch.class);
    private static final String HELD = "SELECT device_id, install_epoch, credential FROM devices WHERE device_id = ANY(?::text[])";
    private static final String CHANGED_SINCE =
            "SELECT now(), NULL, NULL, NULL UNION ALL "
            + "(SELECT NULL, device_id, install_epoch, credential FROM devices WHERE updated_at >= ?)";

    /** A held session as the watch sees it ({@link DeviceConnection} on a gateway). */
    interface Held {
        /** Null until the connection authenticated. */
        DevicePrincipal principal();

        boolean isOpen();

        /** Tells the client why (an error frame without rid) and closes with the code's status. */
        void endSession(ErrorCode code, String why);
    }

    /** A device's credentials as the database has them now. */
    private record Current(int epoch, long credential) {
    }

    private final DataSource db;
    private final Supplier<? extends Iterable<? extends Held>> connections;
    private final Duration interval;
    private final AtomicLong passes = new AtomicLong();
    /** Sessions closed, by this watch (tests, meters). */
    final AtomicLong closed = new AtomicLong();
    /** Full passes done (tests). */
    final AtomicLong fullPasses = new AtomicLong();
    /** The database time at the start of the previous pass; null before the first. */
    private Timestamp previous;
    private ScheduledExecutorService timer;

    CredentialWatch(DataSource db, Supplier<? extends Iterable<? extends Held>> connections, Duration interval) {
        this.db = db;
        this.connections = connections;
        this.interval = interval;
    }

    CredentialWatch start() {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gw-credential-watch");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::checkSafely, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
        return this;
    }

    /** Completed checks (tests wait for one to know the watch has looked at a connection). */
    long passes() {
        return passes.get();
    }

    private void checkSafely() {
        try {
            check();
            passes.incrementAndGet();
        } catch (SQLException | RuntimeException e) {
            // The next pass tries again; while the database is down no credential can change either.
            log.warn("credential check failed: {}", e.toString());
        }
    }

    /** One pass: closes every held connection whose credentials ended. */
    void check() throws SQLException {
        boolean full = previous == null || passes.get() % FULL_EVERY == 0;
        Timestamp since = previous == null ? new Timestamp(0) : new Timestamp(previous.getTime() - LOOKBACK.toMillis());
        Map<String, Current> changed = new HashMap<>();
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(CHANGED_SINCE)) {
            ps.setTimestamp(1, since);
            Timestamp started = null;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(2) == null) started = rs.getTimestamp(1);
                    else changed.put(rs.getString(2), new Current(rs.getInt(3), rs.getLong(4)));
                }
            }
            if (full) {
                Set<String> asked = new HashSet<>();
                Map<String, Current> current = readHeld(c, asked);
                closeEnded(current, asked);
                fullPasses.incrementAndGet();
            } else if (!changed.isEmpty()) {
                closeEnded(changed, Set.of());
            }
            previous = started;
        }
    }

    /** The current credentials of every held device; {@code asked} receives the devices asked for. */
    private Map<String, Current> readHeld(Connection c, Set<String> asked) throws SQLException {
        for (Held conn : connections.get()) {
            DevicePrincipal p = conn.principal();
            if (p != null && conn.isOpen()) asked.add(p.deviceId());
        }
        List<String> devices = new ArrayList<>(asked);
        Map<String, Current> current = new HashMap<>();
        if (devices.isEmpty()) return current;
        try (PreparedStatement ps = c.prepareStatement(HELD)) {
            for (int from = 0; from < devices.size(); from += CHUNK) {
                List<String> chunk = devices.subList(from, Math.min(devices.size(), from + CHUNK));
                ps.setArray(1, c.createArrayOf("text", chunk.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) current.put(rs.getString(1), new Current(rs.getInt(2), rs.getLong(3)));
                }
            }
        }
        return current;
    }

    /**
     * Closes the held connections whose credentials are not the device's current ones. A device
     * in {@code asked} (the full pass read it) and missing from {@code current} was removed; one
     * that is in neither authenticated after the database was read (the connections are listed
     * again to be judged, and a connect burst adds some meanwhile): its own authentication was
     * the check, and the next pass judges it.
     */
    private void closeEnded(Map<String, Current> current, Set<String> asked) {
        for (Held conn : connections.get()) {
            DevicePrincipal p = conn.principal();
            if (p == null || !conn.isOpen()) continue;
            Current now = current.get(p.deviceId());
            if (now == null) {
                if (asked.contains(p.deviceId())) close(conn, ErrorCode.STALE_INSTALL, "device " + p.deviceId() + " was removed");
            } else if (now.epoch() != p.installEpoch()) {
                close(conn, ErrorCode.STALE_INSTALL, "device " + p.deviceId() + " was reinstalled (install " + now.epoch() + ")");
            } else if (now.credential() != p.credential()) {
                close(conn, ErrorCode.BAD_TOKEN, "the token of device " + p.deviceId() + " was renewed or revoked");
            }
        }
    }

    private void close(Held conn, ErrorCode code, String why) {
        closed.incrementAndGet();
        conn.endSession(code, why + "; this connection's session is over");
    }

    @Override
    public void close() {
        if (timer != null) timer.shutdownNow();
    }
}
