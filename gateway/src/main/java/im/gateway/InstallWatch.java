package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
 * Closes the connections of installs the device has left behind. Every {@code interval} it reads
 * the current install epoch of every device this gateway holds, in one query per
 * {@link #CHUNK} devices, and closes each connection whose install is older (or whose device is
 * gone) with {@code STALE_INSTALL} and status 4003. A reinstall committed on any gateway
 * therefore reaches this gateway's sockets within one interval plus one query; requests on them
 * meanwhile are refused by the services' own epoch checks. Polling the database (rather than a
 * notice on Kafka) cannot lose a reinstall and works without Kafka; its cost is one indexed
 * lookup per held device per interval.
 */
final class InstallWatch implements AutoCloseable {
    /** Devices per query, so that one statement stays small on a gateway with many connections. */
    static final int CHUNK = 5_000;
    private static final Logger log = LoggerFactory.getLogger(InstallWatch.class);
    private static final String EPOCHS = "SELECT device_id, install_epoch FROM devices WHERE device_id = ANY(?::text[])";

    private final DataSource db;
    private final Supplier<? extends Iterable<DeviceConnection>> connections;
    private final Duration interval;
    private final AtomicLong passes = new AtomicLong();
    final AtomicLong closed = new AtomicLong();
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
        Map<String, List<DeviceConnection>> held = new HashMap<>();
        for (DeviceConnection c : connections.get()) {
            DevicePrincipal p = c.principal();
            if (p != null && c.isOpen()) held.computeIfAbsent(p.deviceId(), k -> new ArrayList<>()).add(c);
        }
        if (held.isEmpty()) return;
        List<String> devices = new ArrayList<>(held.keySet());
        Map<String, Integer> current = new HashMap<>();
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(EPOCHS)) {
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
                closed.incrementAndGet();
                conn.replyAndClose(new ErrorFrame(null, ErrorCode.STALE_INSTALL, "device " + e.getKey()
                        + (epoch == null ? " was removed" : " was reinstalled (install " + epoch + ")")
                        + "; this install's connection is closed"), ErrorCode.STALE_INSTALL.closeStatus(), ErrorCode.STALE_INSTALL);
            }
        }
    }

    @Override
    public void close() {
        if (timer != null) timer.shutdownNow();
    }
}
