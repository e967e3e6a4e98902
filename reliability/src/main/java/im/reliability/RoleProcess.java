package im.reliability;

import im.infra.config.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One platform role (relay, delivery node, sweeper, gateway) in its own JVM, started from this
 * JVM's class path with the role's main class and IM_* variables, so the nemesis can {@code kill -9}
 * it. Its output goes to a log file; lines {@code IM_FAULT: dropped <point>} (printed by
 * {@code Faults} when a drop rule fires) are counted per point.
 */
final class RoleProcess {
    private static final String DROPPED = "IM_FAULT: dropped ";

    final String name;
    private final Process process;
    private final Map<String, AtomicLong> dropped = new ConcurrentHashMap<>();

    private RoleProcess(String name, Process process) {
        this.name = name;
        this.process = process;
    }

    /** Starts the role; the returned handle is ready once {@link #awaitReady} saw the ready line. */
    static RoleProcess start(String name, Class<?> main, Map<String, String> env, Path logFile, String readyPrefix,
                             CompletableFuture<Void> ready) {
        ProcessBuilder pb = ChildJvm.onThisClassPath(env,
                List.of("-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"), main.getName());
        Process p;
        try {
            Files.createDirectories(logFile.getParent());
            p = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name, e);
        }
        RoleProcess rp = new RoleProcess(name, p);
        Thread drain = new Thread(() -> rp.drain(logFile, readyPrefix, ready), "drain-" + name);
        drain.setDaemon(true);
        drain.start();
        return rp;
    }

    private void drain(Path logFile, String readyPrefix, CompletableFuture<Void> ready) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter log = new PrintWriter(Files.newBufferedWriter(logFile, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                log.println(line);
                if (line.startsWith(readyPrefix)) {
                    log.flush();
                    ready.complete(null);
                }
                int at = line.indexOf(DROPPED);
                if (at >= 0) dropped.computeIfAbsent(line.substring(at + DROPPED.length()).trim(), k -> new AtomicLong()).incrementAndGet();
            }
        } catch (IOException e) {
            // the process ended
        }
        ready.completeExceptionally(new IllegalStateException(name + " exited (" + exitCodeOrRunning()
                + ") before it printed " + readyPrefix + "; see " + logFile));
    }

    private String exitCodeOrRunning() {
        try {
            return process.waitFor(2, TimeUnit.SECONDS) ? "exit " + process.exitValue() : "running";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    static void awaitReady(CompletableFuture<Void> ready, String what, long millis) {
        try {
            ready.get(millis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException(what + " not ready within " + millis + " ms");
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for " + what);
        }
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Frames dropped by this process' fault rules, per fault point. */
    Map<String, Long> dropped() {
        Map<String, Long> m = new java.util.TreeMap<>();
        dropped.forEach((k, v) -> m.put(k, v.get()));
        return m;
    }

    /** Sends a signal by name ({@code STOP}, {@code CONT}) with kill(1): the JDK has no API for SIGSTOP. */
    void signal(String sig) {
        try {
            Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                throw new IllegalStateException("kill -" + sig + " " + process.pid() + " (" + name + ") failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted signalling " + name);
        }
    }

    /** {@code kill -9}: no shutdown hook, no close, sockets reset by the kernel. */
    void kill() {
        process.destroyForcibly();
        waitGone(30_000);
    }

    /** SIGTERM (the role's shutdown hook closes it), then kill -9 if it is still there after 20 s. */
    void stop() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) kill();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
        }
    }

    private void waitGone(long millis) {
        try {
            if (!process.waitFor(millis, TimeUnit.MILLISECONDS)) throw new IllegalStateException(name + " did not die");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
