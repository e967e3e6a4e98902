package im.embedded;

import im.infra.db.DbConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real PostgreSQL server from the binaries shipped in a Maven jar (zonky), configured the way
 * the platform needs it: {@code wal_level=logical} for CDC, and durable commits
 * ({@code fsync=on}, {@code synchronous_commit=on}; the library's default is off, which would
 * break D1 and D6). Listens on 127.0.0.1 only.
 *
 * <p>It stops only when its owner {@link #close() closes} it. The library would also stop it from
 * a JVM shutdown hook of its own; hooks run at the same time, so on Ctrl-C that one cut the
 * sessions of roles the owner's hook was still stopping (the owner stops PostgreSQL last). An
 * owner that must stop it on exit does so from its own hook, in order.
 */
public final class EmbeddedPg implements AutoCloseable {
    public static final String USER = "postgres";
    public static final String PASSWORD = "postgres";

    /** The server settings of every start (zonky passes them as -c options, not in postgresql.conf). */
    private static final Map<String, String> SERVER_CONFIG = Map.of(
            "listen_addresses", "127.0.0.1",
            "wal_level", "logical",
            "fsync", "on",
            "synchronous_commit", "on",
            "full_page_writes", "on",
            "max_wal_senders", "20",
            "max_replication_slots", "20",
            "max_connections", "300",
            "shared_buffers", "128MB");

    private volatile EmbeddedPostgres pg;   // replaced by restartAfterCrash()
    private final Path dataDir;
    private final boolean keepData;

    private EmbeddedPg(EmbeddedPostgres pg, Path dataDir, boolean keepData) {
        this.pg = pg;
        this.dataDir = dataDir;
        this.keepData = keepData;
    }

    /**
     * Starts PostgreSQL on the data directory (created if missing, kept if {@code keepData}).
     * Port 0 picks a free port.
     */
    public static EmbeddedPg start(Path dataDir, int port, boolean keepData) {
        return new EmbeddedPg(startServer(dataDir, port, keepData), dataDir, keepData);
    }

    private static EmbeddedPostgres startServer(Path dataDir, int port, boolean keepData) {
        try {
            Files.createDirectories(dataDir);
            EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
                    .setDataDirectory(dataDir)
                    .setCleanDataDirectory(!keepData)
                    .setOverrideWorkingDirectory(binariesDir().toFile())
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setRegisterShutdownHook(false);   // the owner stops it, last (see the class comment)
            SERVER_CONFIG.forEach(b::setServerConfig);
            if (port > 0) b.setPort(port);
            return b.start();
        } catch (IOException e) {
            throw new UncheckedIOException("embedded PostgreSQL did not start in " + dataDir, e);
        }
    }

    /** Where the PostgreSQL binaries are unpacked (shared by every run on this machine). */
    public static Path binariesDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "im-embedded-pg");
    }

    public int port() {
        return pg.getPort();
    }

    public Path dataDir() {
        return dataDir;
    }

    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + port() + "/" + database;
    }

    public DbConfig dbConfig(String database, int poolSize) {
        return new DbConfig(jdbcUrl(database), USER, PASSWORD, poolSize);
    }

    /** Creates a database if it does not exist yet. */
    public void createDatabase(String name) {
        if (!name.matches("[a-z0-9_]{1,63}")) throw new IllegalArgumentException("bad database name " + name);
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            var rs = st.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + name + "'");
            if (!rs.next()) st.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create database " + name, e);
        }
    }

    /** The unpacked {@code bin} directory (pg_ctl etc.), for fault tests. */
    public Path binDir() {
        try (var dirs = Files.list(binariesDir())) {
            return dirs.map(d -> d.resolve("bin")).filter(d -> Files.isExecutable(d.resolve("pg_ctl")))
                    .findFirst().orElseThrow(() -> new IllegalStateException("no pg_ctl under " + binariesDir()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Crashes the server like {@code pg_ctl -m immediate stop}, which is SIGQUIT to the postmaster:
     * no checkpoint, the next start runs WAL recovery. (pg_ctl itself refuses to run as root, which
     * these machines are.) Returns once the postmaster is gone. For the D6 test.
     */
    public void crashImmediately() {
        signalPostmaster("QUIT");
    }

    /**
     * {@code kill -9} of the postmaster, as a machine or process failure looks: no shutdown at all.
     * Its backends notice the postmaster is gone and exit by themselves. Returns once the
     * postmaster is gone. For failover tests (the data directory is not started again).
     */
    public void killPostmaster() {
        signalPostmaster("KILL");
    }

    private void signalPostmaster(String signal) {
        long pid;
        try {
            pid = Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).trim());
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("no running postmaster in " + dataDir, e);
        }
        run(List.of("kill", "-" + signal, String.valueOf(pid)));
        ProcessHandle.of(pid).ifPresent(h -> {
            try {
                h.onExit().get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("postmaster " + pid + " did not exit after SIG" + signal, e);
            }
        });
    }

    /** A new connection to {@code database} as the superuser (the caller closes it). */
    public Connection connect(String database) throws SQLException {
        return pg.getDatabase(USER, database).getConnection();
    }

    /**
     * Starts the server again on the same data directory and port after {@link #crashImmediately()};
     * PostgreSQL replays its WAL before it accepts connections.
     */
    public synchronized void restartAfterCrash() {
        if (!keepData) {
            // The library deletes a non-kept data directory when its handle closes: that would wipe the cluster.
            throw new IllegalStateException("restartAfterCrash needs a server started with keepData=true");
        }
        int port = port();
        try {
            pg.close();   // releases the library's lock on the data directory; the server is already gone
        } catch (IOException | RuntimeException e) {
            System.err.println("closing the crashed PostgreSQL handle: " + e);
        }
        pg = startServer(dataDir, port, true);
    }

    private static void run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public void close() {
        try {
            pg.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
