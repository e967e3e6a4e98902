package im.launcher;

import im.infra.config.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * {@code java -jar im.jar platform ...} as a child process on fresh data directories under
 * {@code dir} and free ports, with every line it writes (stdout and stderr) kept in order. The
 * jar is the one the build just packaged ({@code -Dim.jar}, as failsafe sets it).
 */
final class PlatformChild {
    final Process process;
    final List<String> output = new CopyOnWriteArrayList<>();
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private final Map<String, CompletableFuture<String>> awaited = new HashMap<>();

    private PlatformChild(Process process) {
        this.process = process;
    }

    /** Starts it with {@code env} on top of the fresh directories and ports; {@code args} follow "platform". */
    static PlatformChild start(Path dir, Map<String, String> env, String... args) throws IOException {
        Path jar = Path.of(System.getProperty("im.jar", "target/im.jar")).toAbsolutePath();
        Map<String, String> all = new HashMap<>(Map.of("IM_PG_DATA_DIR", dir.resolve("pg").toString(),
                "IM_KAFKA_DATA_DIR", dir.resolve("kafka").toString(), "IM_PG_PORT", "0", "IM_KAFKA_PORT", "0",
                "IM_GATEWAY_PORT", "0", "IM_ADMIN_PORT", "0", "IM_OPS_PORT", "0"));
        all.putAll(env);
        List<String> command = new ArrayList<>(List.of("-Xmx512m", "-jar", jar.toString(), "platform"));
        command.addAll(List.of(args));
        PlatformChild p = new PlatformChild(ChildJvm.builder(all, command).redirectErrorStream(true).start());
        Thread reader = new Thread(p::read, "platform-output");
        reader.setDaemon(true);
        reader.start();
        return p;
    }

    private void read() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                output.add(line);
                synchronized (awaited) {
                    for (Map.Entry<String, CompletableFuture<String>> e : awaited.entrySet()) {
                        if (line.contains(e.getKey())) e.getValue().complete(line);
                    }
                }
            }
        } catch (IOException ignored) {
            // the platform ended
        }
        synchronized (awaited) {
            awaited.values().forEach(f -> f.completeExceptionally(new AssertionError("the platform ended first")));
        }
        ended.complete(null);
    }

    /** The first line containing {@code text} (also one written before this call), within {@code seconds}. */
    String awaitLine(String text, long seconds) {
        CompletableFuture<String> f;
        synchronized (awaited) {
            f = awaited.computeIfAbsent(text, t -> new CompletableFuture<>());
            output.stream().filter(l -> l.contains(text)).findFirst().ifPresent(f::complete);
            if (ended.isDone()) f.completeExceptionally(new AssertionError("the platform ended first"));
        }
        try {
            return f.get(seconds, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("no line with '" + text + "': " + e + "\n" + String.join("\n", output), e);
        }
    }

    /** Waits until it has ended and every line it wrote has been read. */
    void awaitOutputEnd(long seconds) throws Exception {
        ended.get(seconds, TimeUnit.SECONDS);
    }
}
