package im.gateway;

import im.infra.config.ChildJvm;
import im.infra.config.ConfigKeys;
import im.testkit.TestStack;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A gateway in its own JVM (the class path of this test JVM), so a fault point can halt it with
 * exit code 137 like a crashed process. Waits for its {@code IM_READY} line.
 */
final class GatewayProcess implements AutoCloseable {
    private final Process process;
    private final int port;
    private final Path log;

    private GatewayProcess(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    static GatewayProcess start(TestStack stack, String faults) throws IOException {
        return start(stack, faults, Map.of());
    }

    /** As {@link #start(TestStack, String)} with further settings. */
    static GatewayProcess start(TestStack stack, String faults, Map<String, String> extra) throws IOException {
        Map<String, String> settings = new HashMap<>(Map.of(
                ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_TOKEN.name(), Fixture.ADMIN_TOKEN,
                ConfigKeys.FAULT.name(), faults));
        settings.putAll(extra);
        Map<String, String> env = new HashMap<>(stack.settings(settings).explicitValues());
        Path log = Files.createTempFile("gateway-", ".log");
        Process p = ChildJvm.onThisClassPath(env, List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"), GatewayMain.class.getName())
                .start();
        CompletableFuture<Integer> ready = new CompletableFuture<>();
        Thread pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    Files.writeString(log, line + "\n", java.nio.file.StandardOpenOption.APPEND);
                    if (line.startsWith("IM_READY gateway port=")) {
                        ready.complete(Integer.parseInt(line.replaceAll(".*port=(\\d+).*", "$1")));
                    }
                }
            } catch (IOException e) {
                ready.completeExceptionally(e);
            }
            ready.completeExceptionally(new IOException("gateway exited before it was ready"));
        }, "gateway-child-output");
        pump.setDaemon(true);
        pump.start();
        try {
            return new GatewayProcess(p, ready.get(60, TimeUnit.SECONDS), log);
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IOException("gateway child did not start; its output: " + Files.readString(log), e);
        }
    }

    URI ws() {
        return URI.create("ws://127.0.0.1:" + port + "/ws");
    }

    /** Waits for the process to exit and returns its exit code. */
    int awaitExit(Duration timeout) throws Exception {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("gateway still running after " + timeout + "; output: " + Files.readString(log));
        }
        return process.exitValue();
    }

    String output() throws IOException {
        return Files.readString(log);
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
