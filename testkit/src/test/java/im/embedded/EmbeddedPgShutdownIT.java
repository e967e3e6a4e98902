package im.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded PostgreSQL stops when its owner closes it, not by itself when the JVM shuts down:
 * the platform's shutdown hook stops the roles first and PostgreSQL last, and a second hook that
 * stopped the server at the same time (the library's own, on by default) cut the roles' sessions
 * under them while they were still stopping (the relay logged an ERROR on every Ctrl-C).
 */
class EmbeddedPgShutdownIT {
    @Test
    void postgresqlOutlivesTheJvmsShutdownUntilItsOwnerClosesIt(@TempDir Path dir) throws Exception {
        Process p = ChildJvm.onThisClassPath(Map.of(), List.of("-Xmx256m"), Owner.class.getName(), dir.toString())
                .redirectErrorStream(true).start();
        assertTrue(p.waitFor(180, TimeUnit.SECONDS), "the child JVM ended");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(out.contains("started"), out);
        assertTrue(out.contains("owner's hook: PostgreSQL answered 1 after 2 s of shutdown"), out);
        assertTrue(out.contains("owner's hook: closed"), out);
        assertEquals(0, p.exitValue(), out);
    }

    /**
     * Starts the embedded server, then exits; its own shutdown hook, like the platform's, still uses
     * the server (after a pause in which a concurrent hook would have stopped it) before closing it.
     */
    public static final class Owner {
        public static void main(String[] args) throws Exception {
            EmbeddedPg pg = EmbeddedPg.start(Path.of(args[0]).resolve("pg"), 0, false);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    // The roles stopping take a while; PostgreSQL must answer throughout.
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                    int answers = 0;
                    while (System.nanoTime() < end) {
                        try (Connection c = pg.connect("postgres"); Statement st = c.createStatement();
                             ResultSet rs = st.executeQuery("SELECT 1")) {
                            rs.next();
                            answers += rs.getInt(1);
                        }
                    }
                    System.out.println("owner's hook: PostgreSQL answered " + (answers > 0 ? 1 : 0) + " after 2 s of shutdown");
                } catch (Exception e) {
                    System.out.println("owner's hook: PostgreSQL gone during shutdown: " + e);
                } finally {
                    pg.close();
                    System.out.println("owner's hook: closed");
                }
            }, "owner-shutdown"));
            System.out.println("started");
            System.exit(0);
        }
    }
}
