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
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes the connections of installs the device has left behind, with {@code STALE_INSTALL} and
 * status 4003. A reinstall retires the old install in the same transaction that moves the device
 * on (a row of {@code device_installs}, {@code retired_at} = the database clock at the insert).
 * Every {@code interval} the watch reads the rows retired since its previous pass (an indexed
 * range, minus {@link #LOOKBACK} for transactions that committed after a later one), and closes
 * the held connections of those installs: a pass costs O(reinstalls), and a reinstall committed on
 * any gateway reaches this gateway's sockets within one interval plus one query. Requests on them
 * meanwhile are refused by the services' own epoch checks. Every {@link #FULL_EVERY}th pass, and
 * the first, also reads the current epoch of every held device (one query per {@link #CHUNK}):
 * the net for a reinstall whose transaction ran longer than the look-back, so that nothing relies
 * on commit timing. Polling the database (rather than a notice on Kafka) cannot lose a reinstall
 * and works without Kafka.
 */
final class InstallWatch implements AutoCloseable {
    /** Devices per query of a full pass, so that one statement stays small on a gateway with many connections. */
    static final int CHUNK = 5_000;
    /** Every this many passes, one reads every held device's epoch (about once a minute at the default interval). */
    static final int FULL_EVERY = 60;
    /** Retirements are read from this long before the previous pass's database time. */
    static final Duration LOOKBACK = Duration.ofSeconds(10);
    private static final Logger log = LoggerFactory.getLogger(InstallWatch.class);
    private static final String EPOCHS = "SELECT device_id, install_epoch FROM devices WHERE device_id = ANY(?::text[])";
    private static final String RETIRED_SINCE =
            "SELECT now(), NULL, NULL UNION ALL "
            + "(SELECT NULL, device_id, install_epoch FROM device_installs WHERE retired_at >= ?)";

    private final DataSource db;
    private final Supplier<? extends Iterable<DeviceConnection>> connections;
    private final Duration interval;
    private final AtomicLong passes = new AtomicLong();
    final AtomicLong closed = new AtomicLong();
    /** Full passes done (tests). */
    final AtomicLong fullPasses = new AtomicLong();
    /** The database time at the start of the previous pass; null before the first. */
    private Timestamp previous;
    private ScheduledExecutorService timer;

    InstallWatch(DataSource db, Supplier<? extends Iterable<DeviceConnection>> connections, Duration interval) {
        this.db = db;
        this.connections = connections;
        this.interval = interval;
    }

    InstallWatch start() {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gw-install-watch");
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
            // The next pass tries again; while the database is down no reinstall can commit either.
            log.warn("install check failed: {}", e.toString());
        }
    }

    /** One pass: closes every held connection of a retired install. */
    void check() throws SQLException {
        boolean full = previous == null || passes.get() % FULL_EVERY == 0;
        Timestamp since = previous == null ? new Timestamp(0) : new Timestamp(previous.getTime() - LOOKBACK.toMillis());
        Map<String, Integer> retired = new HashMap<>();   // device -> highest retired install
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(RETIRED_SINCE)) {
            ps.setTimestamp(1, since);
            Timestamp started = null;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(2) == null) started = rs.getTimestamp(1);
                    else retired.merge(rs.getString(2), rs.getInt(3), Math::max);
                }
            }
            if (full) {
                closeStale(c);
                fullPasses.incrementAndGet();
            } else if (!retired.isEmpty()) {
                closeRetired(retired);
            }
            previous = started;
        }
    }

    /** Closes the held connections of the retired installs. */
    private void closeRetired(Map<String, Integer> retired) {
        for (DeviceConnection conn : connections.get()) {
            DevicePrincipal p = conn.principal();
            if (p == null || !conn.isOpen()) continue;
            Integer upTo = retired.get(p.deviceId());
            if (upTo != null && p.installEpoch() <= upTo) close(conn, "device " + p.deviceId() + " was reinstalled");
        }
    }

    /** Reads the current epoch of every held device and closes the connections of any other install. */
    private void closeStale(Connection c) throws SQLException {
        Map<String, List<DeviceConnection>> held = new HashMap<>();
        for (DeviceConnection conn : connections.get()) {
            DevicePrincipal p = conn.principal();
            if (p != null && conn.isOpen()) held.computeIfAbsent(p.deviceId(), k -> new ArrayList<>()).add(conn);
        }
        if (held.isEmpty()) return;
        List<String> devices = new ArrayList<>(held.keySet());
        Map<String, Integer> current = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(EPOCHS)) {
            for (int from = 0; from < devices.size(); from += CHUNK) {
                List<String> chunk = devices.subList(from, Math.min(devices.size(), from + CHUNK));
                ps.setArray(1, c.createArrayOf("text", chunk.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) current.put(rs.getString(1), rs.getInt(2));
                }
            }
        }
        for (Map.Entry<String, List<DeviceConnection>> e : held.entrySet()) {
            Integer epoch = current.get(e.getKey());
            for (DeviceConnection conn : e.getValue()) {
                if (epoch != null && epoch == conn.principal().installEpoch()) continue;
                close(conn, "device " + e.getKey() + (epoch == null ? " was removed" : " was reinstalled (install " + epoch + ")"));
            }
        }
    }

    private void close(DeviceConnection conn, String why) {
        closed.incrementAndGet();
        conn.replyAndClose(new ErrorFrame(null, ErrorCode.STALE_INSTALL, why + "; this install's connection is closed"),
                ErrorCode.STALE_INSTALL.closeStatus(), ErrorCode.STALE_INSTALL);
    }

    @Override
    public void close() {
        if (timer != null) timer.shutdownNow();
    }
}
