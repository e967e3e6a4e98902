package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ChildJvm;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
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
        Path jar = Path.of(System.getProperty("im.jar", "target/im.jar")).toAbsolutePath();
        Process platform = ChildJvm.builder(Map.of("IM_PG_DATA_DIR", dir.resolve("pg").toString(),
                        "IM_KAFKA_DATA_DIR", dir.resolve("kafka").toString(), "IM_PG_PORT", "0", "IM_KAFKA_PORT", "0",
                        "IM_GATEWAY_PORT", "0", "IM_ADMIN_PORT", "0", "IM_OPS_PORT", "0"),
                List.of("-Xmx512m", "-jar", jar.toString(), "platform")).redirectErrorStream(true).start();
        List<String> output = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> ready = new CompletableFuture<>();
        CompletableFuture<Void> relayActive = new CompletableFuture<>();   // it holds its lock session
        CompletableFuture<Void> ended = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(platform.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    output.add(line);
                    if (line.startsWith("IM_READY platform")) ready.complete(null);
                    if (line.contains("relay active for slot")) relayActive.complete(null);
                }
            } catch (java.io.IOException ignored) {
                // the platform ended
            }
            ready.completeExceptionally(new AssertionError("platform exited before it was ready"));
            ended.complete(null);
        });
        reader.setDaemon(true);
        reader.start();
        try {
            try {
                ready.get(180, TimeUnit.SECONDS);
                relayActive.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("not ready: " + e + "\n" + String.join("\n", output), e);
            }
            // pg_ctl starts the server detached from the JVM: find it by its data directory
            String pgData = dir.resolve("pg").toString();
            List<ProcessHandle> postgres = ProcessHandle.allProcesses()
                    .filter(h -> h.info().commandLine().orElse("").contains(pgData)).toList();
            assertTrue(!postgres.isEmpty(), "the embedded PostgreSQL runs on " + pgData);

            platform.destroy();   // SIGTERM
            assertTrue(platform.waitFor(90, TimeUnit.SECONDS), "the platform stopped on SIGTERM\n" + String.join("\n", output));
            ended.get(10, TimeUnit.SECONDS);   // every line it wrote
            List<String> errors = output.stream()
                    .filter(l -> l.matches(".*\\b(ERROR|FATAL)\\b.*") || l.contains("cannot reach PostgreSQL")).toList();
            assertEquals(List.of(), errors, "lines logged while stopping:\n" + String.join("\n", output));
            for (ProcessHandle h : postgres) {   // the postmaster exits just after removing its pid file, which pg_ctl waits for
                try {
                    h.onExit().get(10, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new AssertionError("PostgreSQL left running: " + h.info());
                }
            }
        } finally {
            output.forEach(System.out::println);
            platform.destroyForcibly();
            platform.descendants().forEach(ProcessHandle::destroyForcibly);
        }
    }
}
