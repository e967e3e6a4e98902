package im.infra.db;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * A real PostgreSQL server from the binaries shipped in a Maven jar (zonky), configured the way
 * the platform needs it: {@code wal_level=logical} for CDC, and durable commits
 * ({@code fsync=on}, {@code synchronous_commit=on}; the library's default is off, which would
 * break D1 and D6). Listens on 127.0.0.1 only.
 */
public final class EmbeddedPg implements AutoCloseable {
    public static final String USER = "postgres";
    public static final String PASSWORD = "postgres";

    private final EmbeddedPostgres pg;
    private final Path dataDir;

    private EmbeddedPg(EmbeddedPostgres pg, Path dataDir) {
        this.pg = pg;
        this.dataDir = dataDir;
    }

    /**
     * Starts PostgreSQL on the data directory (created if missing, kept if {@code keepData}).
     * Port 0 picks a free port.
     */
    public static EmbeddedPg start(Path dataDir, int port, boolean keepData) {
        try {
            Files.createDirectories(dataDir);
            EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
                    .setDataDirectory(dataDir)
                    .setCleanDataDirectory(!keepData)
                    .setOverrideWorkingDirectory(binariesDir().toFile())
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("wal_level", "logical")
                    .setServerConfig("fsync", "on")
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("full_page_writes", "on")
                    .setServerConfig("max_wal_senders", "20")
                    .setServerConfig("max_replication_slots", "20")
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("shared_buffers", "128MB");
            if (port > 0) b.setPort(port);
            EmbeddedPostgres pg = b.start();
            return new EmbeddedPg(pg, dataDir);
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

    @Override
    public void close() {
        try {
            pg.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
