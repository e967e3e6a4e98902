package im.launcher;

import im.infra.config.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The roles of {@code im platform --processes}: each one a child JVM running {@code im <role>}
 * from this JVM's class path (the shaded jar when started with {@code java -jar}), configured by
 * IM_* variables only, exactly like a compose service. Their output is copied to this process'
 * stdout with a {@code [name]} prefix. A child that exits while the platform runs is started again
 * after a second (like compose's {@code restart: unless-stopped}); {@link #close()} stops them all
 * with SIGTERM (their shutdown hooks close cleanly), then SIGKILL after 20 s.
 */
final class RoleProcesses implements AutoCloseable {
    /** One role instance: the {@code im} subcommand, its name in the output, its own IM_* values. */
    record Spec(String name, String role, Map<String, String> env) {}

    /** A started child: the first IM_READY line it printed. */
    record Ready(String name, String readyLine) {}

    private final PrintStream out;
    private final List<Supervised> children = new ArrayList<>();
    private volatile boolean closing;

    RoleProcesses(PrintStream out) {
        this.out = out;
    }

    /** Starts every spec, waits until each printed its IM_READY line, returns those lines in spec order. */
    List<Ready> start(List<Spec> specs, Map<String, String> commonEnv, long readyMillis) {
        for (Spec spec : specs) {
            Supervised s = new Supervised(spec, commonEnv);
            children.add(s);
            s.thread.start();
        }
        List<Ready> ready = new ArrayList<>();
        long deadline = System.currentTimeMillis() + readyMillis;
        for (Supervised s : children) {
            try {
                String line = s.firstReady.get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
                ready.add(new Ready(s.spec.name(), line));
            } catch (TimeoutException e) {
                throw new IllegalStateException(s.spec.name() + " did not become ready within " + readyMillis + " ms");
            } catch (ExecutionException e) {
                throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting " + s.spec.name());
            }
        }
        return ready;
    }

    /** The pids of the children running now (for tests and the summary). */
    List<Long> pids() {
        List<Long> pids = new ArrayList<>();
        for (Supervised s : children) {
            Process p = s.process;
            if (p != null && p.isAlive()) pids.add(p.pid());
        }
        return pids;
    }

    @Override
    public void close() {
        closing = true;
        for (Supervised s : children) {
            Process p = s.process;
            if (p != null) p.destroy();
        }
        for (Supervised s : children) {
            Process p = s.process;
            if (p == null) continue;
            try {
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    out.println("[" + s.spec.name() + "] did not stop within 20 s: killed");
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
            }
        }
    }

    /** One child, started again whenever it exits until the platform closes. */
    private final class Supervised {
        final Spec spec;
        final Map<String, String> commonEnv;
        final CompletableFuture<String> firstReady = new CompletableFuture<>();
        final Thread thread;
        volatile Process process;

        Supervised(Spec spec, Map<String, String> commonEnv) {
            this.spec = spec;
            this.commonEnv = commonEnv;
            this.thread = new Thread(this::run, "child-" + spec.name());
            this.thread.setDaemon(true);
        }

        private void run() {
            while (!closing) {
                Process p;
                try {
                    p = launch();
                } catch (UncheckedIOException e) {
                    firstReady.completeExceptionally(e);
                    return;
                }
                process = p;
                copyOutput(p);
                int code = waitFor(p);
                if (closing) return;
                String msg = spec.name() + " exited with code " + code;
                if (!firstReady.isDone()) {
                    firstReady.completeExceptionally(new IllegalStateException(msg + " before it was ready"));
                    return;
                }
                out.println("[" + spec.name() + "] " + msg + "; starting it again in 1 s");
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        private Process launch() {
            Map<String, String> env = new HashMap<>(commonEnv);
            env.putAll(spec.env());
            ProcessBuilder pb = ChildJvm.onThisClassPath(env, List.of(), Im.class.getName(), spec.role());
            try {
                return pb.start();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot start " + spec.name() + ": " + e.getMessage(), e);
            }
        }

        private void copyOutput(Process p) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    out.println("[" + spec.name() + "] " + line);
                    if (line.startsWith("IM_READY")) firstReady.complete(line);
                }
            } catch (IOException e) {
                // the child ended
            }
        }

        private int waitFor(Process p) {
            try {
                return p.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
    }
}
