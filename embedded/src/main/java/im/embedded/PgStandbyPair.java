package im.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * A PostgreSQL primary and one synchronous hot standby from the same embedded binaries, for
 * failover tests. The zonky bundle has {@code initdb}, {@code pg_ctl} and {@code postgres} only
 * (no {@code pg_basebackup}), so the standby is a cold copy of the cleanly stopped primary with
 * {@code standby.signal}. Streaming replication runs over the physical slot {@value #STANDBY}, and
 * the primary names the standby in {@code synchronous_standby_names} (a commit, and so a {@code
 * sent}, is on both before it returns) and its slot in {@code synchronized_standby_slots} (a
 * logical walsender, i.e. the CDC relay, gets nothing the standby has not flushed). The standby
 * syncs failover logical slots ({@code sync_replication_slots}, {@code hot_standby_feedback}).
 * Layout: {@code <dir>/primary}, {@code <dir>/standby}; data is kept until {@link #close()}.
 */
public final class PgStandbyPair implements AutoCloseable {
    /** The standby's {@code application_name} and the name of its physical slot on the primary. */
    public static final String STANDBY = "standby1";

    private final Path dir;
    private final EmbeddedPg primary;
    private final EmbeddedPg standby;

    private PgStandbyPair(Path dir, EmbeddedPg primary, EmbeddedPg standby) {
        this.dir = dir;
        this.primary = primary;
        this.standby = standby;
    }

    /** Creates both servers and returns once the standby streams as the synchronous standby. */
    public static PgStandbyPair start(Path dir) {
        Path primaryDir = dir.resolve("primary");
        Path standbyDir = dir.resolve("standby");
        EmbeddedPg first = EmbeddedPg.start(primaryDir, 0, true);
        int primaryPort = first.port();
        try (Connection c = first.connect("postgres"); Statement st = c.createStatement()) {
            st.execute("SELECT pg_create_physical_replication_slot('" + STANDBY + "', true)");
            st.execute("ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY + "'");
            st.execute("ALTER SYSTEM SET synchronized_standby_slots = '" + STANDBY + "'");
        } catch (SQLException e) {
            first.close();
            throw new IllegalStateException("cannot prepare the primary for a standby", e);
        }
        first.close();   // pg_ctl stop -m fast: a shutdown checkpoint, so the copy is consistent
        copyForStandby(primaryDir, standbyDir, primaryPort);
        EmbeddedPg primary = EmbeddedPg.start(primaryDir, primaryPort, true);
        EmbeddedPg standby;
        try {
            standby = EmbeddedPg.start(standbyDir, 0, true);
        } catch (RuntimeException e) {
            primary.close();
            throw e;
        }
        PgStandbyPair pair = new PgStandbyPair(dir, primary, standby);
        pair.awaitSyncStandby(Duration.ofSeconds(60));
        return pair;
    }

    /**
     * The cold copy: everything but the lock and pid files and the primary's slots, then
     * {@code standby.signal} and the standby's settings in {@code postgresql.auto.conf} (replacing
     * the primary's: a promoted standby must not wait for a synchronous standby of its own).
     */
    private static void copyForStandby(Path from, Path to, int primaryPort) {
        Set<String> skip = Set.of("postmaster.pid", "postmaster.opts", "epg-lock", "postgresql.auto.conf");
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path rel = from.relativize(f);
                if (skip.contains(rel.toString()) || (rel.startsWith("pg_replslot") && rel.getNameCount() > 1)) continue;
                Path target = to.resolve(rel.toString());
                if (Files.isDirectory(f)) Files.createDirectories(target);
                else Files.copy(f, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.COPY_ATTRIBUTES);
            }
            // PostgreSQL refuses a data directory others can read.
            Files.setPosixFilePermissions(to, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            Files.writeString(to.resolve("standby.signal"), "", StandardCharsets.UTF_8);
            Files.writeString(to.resolve("postgresql.auto.conf"), String.join("\n",
                    "# standby of " + from + " (written by PgStandbyPair)",
                    "primary_conninfo = 'host=127.0.0.1 port=" + primaryPort + " user=" + EmbeddedPg.USER
                            + " password=" + EmbeddedPg.PASSWORD + " application_name=" + STANDBY + " dbname=postgres'",
                    "primary_slot_name = '" + STANDBY + "'",
                    "hot_standby = on",
                    "hot_standby_feedback = on",
                    "sync_replication_slots = on",
                    ""), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + from + " to " + to, e);
        }
    }

    public EmbeddedPg primary() {
        return primary;
    }

    public EmbeddedPg standby() {
        return standby;
    }

    /**
     * The URL every role uses: both servers, {@code targetServerType=primary}, so a connection
     * made after a promotion reaches the new primary without any role being reconfigured.
     */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + primary.port() + ",127.0.0.1:" + standby.port() + "/" + database
                + "?targetServerType=primary";
    }

    /** Blocks until the primary reports the standby streaming with {@code sync_state = 'sync'}. */
    public void awaitSyncStandby(Duration timeout) {
        awaitTrue(timeout, () -> "the standby streaming as synchronous standby", () -> queryBoolean(primary,
                "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = '" + STANDBY
                        + "' AND state = 'streaming' AND sync_state = 'sync')"));
    }

    /**
     * Blocks until the standby holds logical slot {@code slot} as a synced, persistent (not
     * temporary, so it survives a promotion) failover slot.
     */
    public void awaitSlotSynced(String slot, Duration timeout) {
        awaitTrue(timeout, () -> "slot " + slot + " synced to the standby; primary: " + slots(primary, slot)
                + ", standby: " + slots(standby, slot), () -> queryBoolean(standby,
                "SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '" + slot
                        + "' AND synced AND NOT temporary AND failover AND invalidation_reason IS NULL)"));
    }

    /** {@code kill -9} of the primary's postmaster. */
    public void killPrimary() {
        primary.killPostmaster();
    }

    /** Promotes the standby ({@code pg_promote}, what {@code pg_ctl promote} does) and waits until it is out of recovery. */
    public void promoteStandby() {
        try (Connection c = standby.connect("postgres"); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_promote(true, 60)")) {
            rs.next();
            if (!rs.getBoolean(1)) throw new IllegalStateException("pg_promote did not finish within 60 s");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot promote the standby", e);
        }
    }

    /** Crashes the standby ({@code pg_ctl -m immediate}); synchronous commits on the primary wait meanwhile. */
    public void crashStandby() {
        standby.crashImmediately();
    }

    /** Starts the crashed standby again on its port; it reconnects to the primary and catches up. */
    public void restartStandby() {
        standby.restartAfterCrash();
    }

    private static boolean queryBoolean(EmbeddedPg pg, String sql) {
        try (Connection c = pg.connect("postgres"); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() && rs.getBoolean(1);
        } catch (SQLException e) {
            return false;
        }
    }

    /** The slot's row (synced, temporary, failover, confirmed_flush_lsn, invalidation_reason), for failure messages. */
    private static String slots(EmbeddedPg pg, String slot) {
        try (Connection c = pg.connect("postgres"); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                "SELECT synced, temporary, failover, confirmed_flush_lsn, invalidation_reason FROM pg_replication_slots"
                        + " WHERE slot_name = '" + slot + "'")) {
            if (!rs.next()) return "(none)";
            return "synced=" + rs.getString(1) + " temporary=" + rs.getString(2) + " failover=" + rs.getString(3)
                    + " confirmed=" + rs.getString(4) + " invalidation=" + rs.getString(5);
        } catch (SQLException e) {
            return "(" + e.getMessage() + ")";
        }
    }

    private static void awaitTrue(Duration timeout, java.util.function.Supplier<String> what, java.util.function.BooleanSupplier cond) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("not within " + timeout + ": " + what.get());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
    }

    /** Stops both servers (a killed one is skipped) and deletes their data. */
    @Override
    public void close() {
        for (EmbeddedPg pg : new EmbeddedPg[] {standby, primary}) {
            try {
                pg.close();
            } catch (RuntimeException e) {
                System.err.println("stopping " + pg.dataDir() + ": " + e);
            }
        }
        BrokerSettings.deleteRecursively(dir);
    }
}
