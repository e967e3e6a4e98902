package im.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.FileVisitResult;
import java.nio.file.NoSuchFileException;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
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

/**
 * A PostgreSQL primary and one synchronous hot standby from the same embedded binaries, for
 * failover tests. The zonky bundle has {@code initdb}, {@code pg_ctl} and {@code postgres} only
 * (no {@code pg_basebackup}), so the standby is a cold copy of the cleanly stopped primary with
 * {@code standby.signal}. Streaming replication runs over the physical slot {@value #STANDBY}, and
 * the primary names the standby in {@code synchronous_standby_names} (a commit, and so a {@code
 * sent}, is on both before it returns) and its slot in {@code synchronized_standby_slots} (a
 * logical walsender, i.e. the CDC relay, gets nothing the standby has not flushed). The standby
 * syncs failover logical slots ({@code sync_replication_slots}, {@code hot_standby_feedback}).
 * After a failover {@link #rebuildStandby} builds a new standby of the promoted server with an
 * online base backup. Layout: {@code <dir>/primary}, {@code <dir>/standby}, {@code
 * <dir>/standby-<n>} for rebuilt standbys; data is kept until {@link #close()}.
 */
public final class PgStandbyPair implements AutoCloseable {
    /** The standby's {@code application_name} and the name of its physical slot on the primary. */
    public static final String STANDBY = "standby1";

    private final Path dir;
    private volatile EmbeddedPg primary;   // swapped by rebuildStandby()
    private volatile EmbeddedPg standby;
    private int rebuilds;

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
        copyDataDir(primaryDir, standbyDir, false);
        writeStandbyConfig(standbyDir, primaryDir, primaryPort);
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
     * Copies a data directory for a standby: everything but the lock and pid files, the server's
     * own {@code postgresql.auto.conf} and the contents of the slot directory (and, for an {@code
     * online} copy of a running server, what pg_basebackup leaves out too: the WAL but the timeline
     * history files, which the standby streams from the primary instead, and runtime-only
     * directories). An online copy tolerates files that vanish while it walks.
     */
    private static void copyDataDir(Path from, Path to, boolean online) {
        Set<String> skip = Set.of("postmaster.pid", "postmaster.opts", "epg-lock", "postgresql.auto.conf",
                "backup_label", "tablespace_map", "standby.signal", "recovery.signal");
        Set<String> emptied = online ? Set.of("pg_replslot", "pg_wal", "pg_dynshmem", "pg_notify", "pg_serial",
                "pg_snapshots", "pg_stat_tmp", "pg_subtrans") : Set.of("pg_replslot");
        try {
            Files.walkFileTree(from, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
                    Path rel = from.relativize(d);
                    if (online && rel.getNameCount() > 0 && rel.getFileName().toString().startsWith("pgsql_tmp")) {
                        return FileVisitResult.SKIP_SUBTREE;
                    }
                    Files.createDirectories(to.resolve(rel.toString()));
                    boolean keepWalDir = rel.getNameCount() == 1 && rel.toString().equals("pg_wal");
                    return rel.getNameCount() == 1 && emptied.contains(rel.toString()) && !keepWalDir
                            ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                    Path rel = from.relativize(f);
                    if (skip.contains(rel.toString())) return FileVisitResult.CONTINUE;
                    // Of the WAL directory an online copy takes the timeline history files only.
                    if (online && rel.getName(0).toString().equals("pg_wal") && !rel.toString().endsWith(".history")) {
                        return FileVisitResult.CONTINUE;
                    }
                    try {
                        Files.copy(f, to.resolve(rel.toString()), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.COPY_ATTRIBUTES);
                    } catch (NoSuchFileException gone) {
                        if (!online) throw gone;   // dropped by the running server meanwhile: not needed
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
                    if (online && e instanceof NoSuchFileException) return FileVisitResult.CONTINUE;
                    throw e;
                }
            });
            // PostgreSQL refuses a data directory others can read.
            Files.setPosixFilePermissions(to, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + from + " to " + to, e);
        }
    }

    /**
     * {@code standby.signal} and the standby's settings in {@code postgresql.auto.conf} (replacing
     * the primary's: a promoted standby must not wait for a synchronous standby of its own).
     */
    private static void writeStandbyConfig(Path to, Path from, int primaryPort) {
        try {
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
            throw new UncheckedIOException("cannot configure the standby in " + to, e);
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
        long[] nextNudge = {0};
        awaitTrue(timeout, () -> "slot " + slot + " synced to the standby; primary: " + slots(primary, slot)
                + ", standby: " + slots(standby, slot), () -> {
                    if (queryBoolean(standby, "SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '" + slot
                            + "' AND synced AND NOT temporary AND failover AND invalidation_reason IS NULL)")) {
                        return true;
                    }
                    // Only speeds the wait up, changes nothing it waits for: the primary's slot moves its
                    // restart_lsn and catalog_xmin at running-xacts records (by default every 15 s), and the
                    // standby's slot sync worker naps up to 30 s when nothing changed; a snapshot record
                    // each second and a reload (SIGHUP sets the worker's latch) cut both.
                    if (System.nanoTime() - nextNudge[0] > 0) {
                        nextNudge[0] = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
                        queryBoolean(primary, "SELECT pg_log_standby_snapshot() IS NOT NULL");
                        queryBoolean(standby, "SELECT pg_reload_conf()");
                    }
                    return false;
                });
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

    /**
     * After {@link #killPrimary()} and {@link #promoteStandby()}: the promoted server becomes the
     * primary, and a new standby of it is built on the dead primary's port (so a multi-host URL
     * naming both ports stays right) in a new directory {@code <dir>/standby-<n>} (backends of the
     * killed postmaster may still be exiting in the old one). The copy is an online base backup,
     * what {@code pg_basebackup -X none} does with the low-level API: a physical slot for the new
     * standby reserves the WAL from before {@code pg_backup_start}, the files are copied while the
     * primary keeps serving, {@code pg_backup_stop} gives the {@code backup_label}, and the standby
     * streams the WAL it needs through the slot. Once it streams, the primary names it its
     * synchronous standby again ({@code synchronous_standby_names}, {@code
     * synchronized_standby_slots}, reload). Until then the primary commits without a synchronous
     * standby: a second failover in that window could lose acknowledged commits. Returns once the
     * new standby is the synchronous standby.
     */
    public synchronized void rebuildStandby(Duration timeout) {
        EmbeddedPg dead = primary;
        EmbeddedPg promoted = standby;
        if (!queryBoolean(promoted, "SELECT NOT pg_is_in_recovery()")) {
            throw new IllegalStateException("rebuildStandby: the standby " + promoted.dataDir() + " was not promoted");
        }
        int port = dead.port();
        try {
            dead.close();   // releases the library's lock; the server is already gone
        } catch (RuntimeException e) {
            System.err.println("closing the killed primary's handle: " + e);
        }
        Path target = dir.resolve("standby-" + (++rebuilds));
        try (Connection c = promoted.connect("postgres"); Statement st = c.createStatement()) {
            st.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '" + STANDBY + "'");
            st.execute("SELECT pg_create_physical_replication_slot('" + STANDBY + "', true)");
            // The backup must be stopped by the session that started it.
            st.execute("SELECT pg_backup_start('rebuild standby " + rebuilds + "', true)");
            copyDataDir(promoted.dataDir(), target, true);
            try (ResultSet rs = st.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(false)")) {
                rs.next();
                Files.writeString(target.resolve("backup_label"), rs.getString(1), StandardCharsets.UTF_8);
                String spcmap = rs.getString(2);
                if (spcmap != null && !spcmap.isEmpty()) Files.writeString(target.resolve("tablespace_map"), spcmap, StandardCharsets.UTF_8);
            }
        } catch (SQLException | IOException e) {
            throw new IllegalStateException("cannot take a base backup of " + promoted.dataDir(), e);
        }
        writeStandbyConfig(target, promoted.dataDir(), promoted.port());
        EmbeddedPg fresh = EmbeddedPg.start(target, port, true);
        primary = promoted;
        standby = fresh;
        awaitTrue(timeout, () -> "the rebuilt standby streaming", () -> queryBoolean(promoted,
                "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = '" + STANDBY + "' AND state = 'streaming')"));
        try (Connection c = promoted.connect("postgres"); Statement st = c.createStatement()) {
            st.execute("ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY + "'");
            st.execute("ALTER SYSTEM SET synchronized_standby_slots = '" + STANDBY + "'");
            st.execute("SELECT pg_reload_conf()");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot make the rebuilt standby synchronous", e);
        }
        awaitSyncStandby(timeout);
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
