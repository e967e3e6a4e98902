package im.relay;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.BaseUnits;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay slot's WAL from {@code pg_replication_slots}, as two gauges (tag {@code slot}):
 * {@code im.relay.slot.retained.wal} (bytes from the slot's {@code restart_lsn} to the current WAL
 * position: what PostgreSQL keeps on disk for this slot) and {@code im.relay.slot.unconfirmed.wal}
 * (bytes from {@code confirmed_flush_lsn}: what the relay has not confirmed yet). Only the active
 * relay samples them, on its lock session right after a heartbeat and at most every
 * {@value #EVERY_MS} ms, so the cost is one catalog read per 5 s; a standby, or an active relay whose
 * sample failed, reports NaN (alert on the max over the instances, and on "no active relay").
 */
final class SlotWal {
    private static final Logger log = LoggerFactory.getLogger(SlotWal.class);
    static final long EVERY_MS = 5_000;
    private static final String SQL = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn),"
            + " pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) FROM pg_replication_slots WHERE slot_name = ?";

    private final String slot;
    private volatile double retained = Double.NaN;
    private volatile double unconfirmed = Double.NaN;
    private long lastNanos;
    private boolean sampled;

    SlotWal(String slot, MeterRegistry meters) {
        this.slot = slot;
        Gauge.builder("im.relay.slot.retained.wal", this, w -> w.retained).baseUnit(BaseUnits.BYTES)
                .description("WAL the relay's replication slot keeps on disk (restart_lsn to the current position); NaN unless active")
                .tag("slot", slot).register(meters);
        Gauge.builder("im.relay.slot.unconfirmed.wal", this, w -> w.unconfirmed).baseUnit(BaseUnits.BYTES)
                .description("WAL past the slot's confirmed_flush_lsn; NaN unless active").tag("slot", slot).register(meters);
    }

    /** Samples the slot on {@code lock} if the last sample is older than {@value #EVERY_MS} ms; never throws. */
    void sample(Connection lock) {
        long now = System.nanoTime();
        if (sampled && now - lastNanos < EVERY_MS * 1_000_000) return;
        sampled = true;
        lastNanos = now;
        try (PreparedStatement ps = lock.prepareStatement(SQL)) {
            ps.setQueryTimeout(1);   // never hold up the next heartbeat for long
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    retained = rs.getDouble(1);
                    unconfirmed = rs.getDouble(2);
                } else {
                    clear();   // not created yet (the engine creates it)
                }
            }
        } catch (SQLException e) {
            log.debug("cannot read pg_replication_slots for slot {}: {}", slot, e.getMessage());
            clear();
        }
    }

    /** No longer the active relay: nothing to report. */
    void clear() {
        retained = Double.NaN;
        unconfirmed = Double.NaN;
        sampled = false;
    }
}
