package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code im platform} (one JVM) stopped as an operator stops it: SIGTERM. The roles stop in the
 * reverse order of their start, PostgreSQL and Kafka last, so no role sees its database or broker
 * go away under it (the relay used to log an ERROR: its lock session was cut by PostgreSQL's own
 * shutdown, which the embedded server's library ran from a JVM shutdown hook of its own, beside
 * the platform's ordered one), and nothing is left running.
 */
class PlatformStopIT {
    @Test
    void sigtermStopsEveryRoleBeforePostgresqlWithoutAnErrorAndLeavesNothingRunning(@TempDir Path dir) throws Exception {
        PlatformChild platform = PlatformChild.start(dir, Map.of());
        try {
            platform.awaitLine("IM_READY platform", 180);
            platform.awaitLine("relay active for slot", 60);   // it holds its lock session
            // pg_ctl starts the server detached from the JVM: find it by its data directory
            String pgData = dir.resolve("pg").toString();
            List<ProcessHandle> postgres = ProcessHandle.allProcesses()
                    .filter(h -> h.info().commandLine().orElse("").contains(pgData)).toList();
            assertTrue(!postgres.isEmpty(), "the embedded PostgreSQL runs on " + pgData);

            platform.process.destroy();   // SIGTERM
            assertTrue(platform.process.waitFor(90, TimeUnit.SECONDS), "the platform stopped on SIGTERM\n"
                    + String.join("\n", platform.output));
            platform.awaitOutputEnd(10);   // every line it wrote
            List<String> errors = platform.output.stream()
                    .filter(l -> l.matches(".*\\b(ERROR|FATAL)\\b.*") || l.contains("cannot reach PostgreSQL")).toList();
            assertEquals(List.of(), errors, "lines logged while stopping:\n" + String.join("\n", platform.output));
            for (ProcessHandle h : postgres) {   // the postmaster exits just after removing its pid file, which pg_ctl waits for
                try {
                    h.onExit().get(10, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new AssertionError("PostgreSQL left running: " + h.info());
                }
            }
        } finally {
            platform.output.forEach(System.out::println);
            platform.process.destroyForcibly();
            platform.process.descendants().forEach(ProcessHandle::destroyForcibly);
        }
    }
}
