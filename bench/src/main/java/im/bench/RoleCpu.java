package im.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * CPU time by role over a window: every live thread of this JVM (thread CPU time, user + system)
 * is given a role by its name, and the embedded PostgreSQL's processes (the postmaster found by
 * its data directory, and its children) are read from {@code /proc}. Threads that start and end
 * inside the window are missed (the roles here are long-lived threads; client I/O pools are not).
 */
final class RoleCpu {
    static final List<String> ROLES = List.of("gateway", "relay", "delivery", "sweeper", "broker", "postgres", "bench clients", "other");

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final long CLOCK_TICK_NANOS = 10_000_000L;   // USER_HZ = 100 on Linux

    /** Nanoseconds of CPU per role at one moment; per-thread values so a diff counts only survivors. */
    record Snapshot(Map<Long, Long> threadNanos, Map<Long, String> threadRole, Map<Long, String> threadName, long postgresNanos) {
    }

    private RoleCpu() {
    }

    static Snapshot now(Path pgDataDir) {
        Map<Long, Long> nanos = new HashMap<>();
        Map<Long, String> roles = new HashMap<>();
        Map<Long, String> names = new HashMap<>();
        for (ThreadInfo t : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
            if (t == null) continue;
            long cpu = THREADS.getThreadCpuTime(t.getThreadId());
            if (cpu < 0) continue;
            nanos.put(t.getThreadId(), cpu);
            roles.put(t.getThreadId(), roleOf(t.getThreadName()));
            names.put(t.getThreadId(), t.getThreadName());
        }
        return new Snapshot(nanos, roles, names, postgresNanos(pgDataDir));
    }

    /** Milliseconds of CPU per role between {@code a} and {@code b}, in {@link #ROLES} order. */
    static Map<String, Double> between(Snapshot a, Snapshot b) {
        Map<String, Double> ms = new LinkedHashMap<>();
        for (String r : ROLES) ms.put(r, 0.0);
        for (Map.Entry<Long, Long> e : b.threadNanos().entrySet()) {
            long before = a.threadNanos().getOrDefault(e.getKey(), 0L);
            ms.merge(b.threadRole().get(e.getKey()), (e.getValue() - before) / 1e6, Double::sum);
        }
        ms.put("postgres", (b.postgresNanos() - a.postgresNanos()) / 1e6);
        return ms;
    }

    /**
     * The busiest thread names (digits folded) of {@code role}, with their total ms: for "other",
     * the next look at {@link #roleOf}; for "bench clients", which SDK thread takes the CPU.
     */
    static String top(Snapshot a, Snapshot b, String role, int k) {
        Map<String, Double> byName = new HashMap<>();
        for (Map.Entry<Long, Long> e : b.threadNanos().entrySet()) {
            if (!role.equals(b.threadRole().get(e.getKey()))) continue;
            String name = b.threadName().get(e.getKey()).replaceAll("[0-9]+", "N");
            byName.merge(name, (e.getValue() - a.threadNanos().getOrDefault(e.getKey(), 0L)) / 1e6, Double::sum);
        }
        StringBuilder sb = new StringBuilder();
        byName.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(k)
                .forEach(e -> sb.append(String.format(java.util.Locale.ROOT, " %s=%.0fms", e.getKey(), e.getValue())));
        return sb.toString();
    }

    static String roleOf(String thread) {
        String t = thread.toLowerCase(java.util.Locale.ROOT);
        if (t.startsWith("bench-delivery")) return "delivery"; // the bench's delivery Streams app, not a client
        if (t.startsWith("bench-") || t.startsWith("httpclient") || t.contains("websocket") || t.startsWith("im-client")) return "bench clients";
        if (t.contains("delivery")) return "delivery";
        if (t.contains("sweeper")) return "sweeper";
        if (t.contains("debezium") || t.startsWith("relay") || t.startsWith("pool-") || t.contains("change-event-source")
                || t.contains("im-relay")) return "relay";
        if (t.startsWith("xnio") || t.startsWith("gw-") || t.startsWith("send-lane") || t.startsWith("cursor-")
                || t.startsWith("gateway") || t.startsWith("install-")) return "gateway";
        if (t.contains("kafka") || t.contains("raft") || t.contains("quorum") || t.contains("controller")
                || t.contains("reaper") || t.startsWith("executor-") || t.contains("log-cleaner") || t.contains("broker")
                || t.contains("metadata") || t.contains("group-coordinator") || t.contains("transaction")) return "broker";
        return "other";
    }

    /** CPU of the postmaster whose command line names {@code dataDir}, and of its children. */
    private static long postgresNanos(Path dataDir) {
        if (dataDir == null) return 0;
        String needle = dataDir.toString();
        Map<Long, long[]> stats = new HashMap<>();   // pid -> {ppid, ticks}
        long postmaster = -1;
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path p : procs) {
                try {
                    String stat = Files.readString(p.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long pid = Long.parseLong(p.getFileName().toString());
                    stats.put(pid, new long[] {Long.parseLong(f[1]), Long.parseLong(f[11]) + Long.parseLong(f[12])});
                    if (postmaster < 0 && new String(Files.readAllBytes(p.resolve("cmdline"))).contains(needle)) postmaster = pid;
                } catch (IOException | RuntimeException gone) {
                    // the process ended while we read it
                }
            }
        } catch (IOException e) {
            return 0;
        }
        if (postmaster < 0) return 0;
        long ticks = 0;
        for (Map.Entry<Long, long[]> e : stats.entrySet()) {
            if (e.getKey() == postmaster || e.getValue()[0] == postmaster) ticks += e.getValue()[1];
        }
        return ticks * CLOCK_TICK_NANOS;
    }
}
