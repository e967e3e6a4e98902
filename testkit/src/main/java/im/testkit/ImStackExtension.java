package im.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import im.infra.db.Database;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension for integration tests: starts PostgreSQL (and, when a test asks for it,
 * Kafka) once per test JVM and gives each test a {@link TestStack} with its own migrated database
 * and topic prefix, so tests never share state. A {@code TestStack} parameter of a test method is
 * per test; one of a {@code @BeforeAll} method is per class.
 */
public final class ImStackExtension implements ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(ImStackExtension.class);
    private static final AtomicInteger COUNTER = new AtomicInteger();

    @Override
    public boolean supportsParameter(ParameterContext pc, ExtensionContext ec) {
        return pc.getParameter().getType() == TestStack.class;
    }

    @Override
    public Object resolveParameter(ParameterContext pc, ExtensionContext ec) throws ParameterResolutionException {
        return ec.getStore(NS).getOrComputeIfAbsent("stack", k -> new Handle(create()), Handle.class).stack;
    }

    private static TestStack create() {
        SharedStack shared = SharedStack.get();
        int n = COUNTER.incrementAndGet();
        String db = "t" + ProcessHandle.current().pid() + "_" + n;
        shared.createDatabase(db);
        HikariConfig hc = new HikariConfig();
        hc.setPoolName("test-" + db);
        hc.setJdbcUrl(shared.jdbcUrl(db));
        hc.setUsername(shared.pgUser());
        hc.setPassword(shared.pgPassword());
        hc.setMaximumPoolSize(4);
        hc.setMinimumIdle(0);
        hc.setInitializationFailTimeout(-1);
        HikariDataSource ds = new HikariDataSource(hc);
        Database.migrate(ds);
        return new TestStack(shared, db, "t" + ProcessHandle.current().pid() + "-" + n + ".", ds);
    }

    /**
     * Closes the test's pool when its scope ends, and drops the replication slots its relays left on
     * its database: a slot outlives its relay by design (the relay never drops it), and the shared
     * PostgreSQL has room for {@code max_replication_slots} (20) only, which a test JVM running more
     * relays than that in turn would otherwise exhaust ("all replication slots are in use").
     */
    private static final class Handle implements ExtensionContext.Store.CloseableResource, AutoCloseable {
        final TestStack stack;

        Handle(TestStack stack) {
            this.stack = stack;
        }

        @Override
        public void close() {
            ((HikariDataSource) stack.dataSource()).close();
            SharedStack shared = SharedStack.get();
            try (Connection c = DriverManager.getConnection(shared.jdbcUrl(stack.database()), shared.pgUser(), shared.pgPassword());
                 PreparedStatement ps = c.prepareStatement(
                         "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = ? AND NOT active")) {
                ps.setString(1, stack.database());
                ps.execute();
            } catch (SQLException e) {
                throw new IllegalStateException("cannot drop the replication slots of test database " + stack.database(), e);
            }
        }
    }
}
