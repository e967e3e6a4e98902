package im.infra.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * A pooled connection to PostgreSQL (HikariCP) and the schema migrations (Flyway, scripts in
 * {@code db/migration}). Connections are handed out with auto-commit on; code that needs a
 * transaction turns it off and commits itself.
 */
public final class Database implements AutoCloseable {
    private final HikariDataSource pool;

    private Database(HikariDataSource pool) {
        this.pool = pool;
    }

    public static Database open(DbConfig cfg, String poolName) {
        HikariConfig hc = new HikariConfig();
        hc.setPoolName(poolName);
        hc.setJdbcUrl(cfg.jdbcUrl());
        hc.setUsername(cfg.user());
        hc.setPassword(cfg.password());
        hc.setMaximumPoolSize(cfg.poolSize());
        hc.setMinimumIdle(Math.min(2, cfg.poolSize()));
        // Fail fast when PostgreSQL is down: the caller answers UNAVAILABLE and the client resends.
        hc.setConnectionTimeout(3_000);
        hc.setValidationTimeout(1_000);
        // Start even if the database is not up yet; requests fail with UNAVAILABLE until it is.
        hc.setInitializationFailTimeout(-1);
        hc.addDataSourceProperty("tcpKeepAlive", "true");
        hc.addDataSourceProperty("ApplicationName", poolName);
        return new Database(new HikariDataSource(hc));
    }

    /** Applies pending migrations; safe to call from several roles at once (Flyway locks). */
    public static void migrate(DataSource ds) {
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().migrate();
    }

    public DataSource dataSource() {
        return pool;
    }

    public Connection connection() throws SQLException {
        return pool.getConnection();
    }

    @Override
    public void close() {
        pool.close();
    }
}
