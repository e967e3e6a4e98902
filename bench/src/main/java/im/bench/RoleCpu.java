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
 * The JVM's own JIT compiler and GC threads count as roles of their own (read from /proc).
 */
final class RoleCpu {
    static final List<String> ROLES = List.of("gateway", "relay", "delivery", "sweeper", "broker", "postgres", "bench clients",
            "jvm jit", "jvm gc", "other");

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final long CLOCK_TICK_NANOS = 10_000_000L;   // USER_HZ = 100 on Linux

    /** Nanoseconds of CPU per role at one moment; per-thread values so a diff counts only survivors. */
    record Snapshot(Map<Long, Long> threadNanos, Map<Long, String> threadRole, Map<Long, String> threadName,
                    Map<Long, Long> pgProcessNanos, Map<Long, String> pgProcessKind) {
        long postgresNanos() {
            return pgProcessNanos.values().stream().mapToLong(Long::longValue).sum();
        }
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
        jvmOwnThreads(nanos, roles, names);
        Map<Long, Long> pgNanos = new HashMap<>();
        Map<Long, String> pgKinds = new HashMap<>();
        postgresProcesses(pgDataDir, pgNanos, pgKinds);
        return new Snapshot(nanos, roles, names, pgNanos, pgKinds);
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

    /**
     * The JVM's own threads, which ThreadMXBean does not list: the JIT compilers ("C1/C2
     * CompilerThread") and the collector ("GC Thread#n", "G1 ..." and the "VM Thread" that runs
     * safepoint operations), read from {@code /proc/self/task}. Keyed by minus the Linux thread id,
     * apart from the Java thread ids.
     */
    private static void jvmOwnThreads(Map<Long, Long> nanos, Map<Long, String> roles, Map<Long, String> names) {
        Procs.tasks("self").forEach((tid, t) -> {
            String role = Procs.isJitThread(t.comm()) ? "jvm jit"
                    : t.comm().startsWith("GC Thread") || t.comm().startsWith("G1 ") || t.comm().equals("VM Thread") ? "jvm gc" : null;
            if (role == null) return;
            long id = -tid;
            nanos.put(id, t.ticks() * CLOCK_TICK_NANOS);
            roles.put(id, role);
            names.put(id, t.comm());
        });
    }

    /**
     * The busiest kinds of PostgreSQL process (the title a backend shows in {@code ps}, without its
     * client address and state: "walsender", "bench bench" for a client backend, "walwriter"...).
     */
    static String topPostgres(Snapshot a, Snapshot b, int k) {
        Map<String, Double> byKind = new HashMap<>();
        for (Map.Entry<Long, Long> e : b.pgProcessNanos().entrySet()) {
            byKind.merge(b.pgProcessKind().get(e.getKey()),
                    (e.getValue() - a.pgProcessNanos().getOrDefault(e.getKey(), 0L)) / 1e6, Double::sum);
        }
        StringBuilder sb = new StringBuilder();
        byKind.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(k)
                .forEach(e -> sb.append(String.format(java.util.Locale.ROOT, " %s=%.0fms", e.getKey(), e.getValue())));
        return sb.toString();
    }

    static String roleOf(String thread) {
        String t = thread.toLowerCase(java.util.Locale.ROOT);
        if (t.startsWith("bench-delivery")) return "delivery"; // the bench's delivery Streams app, not a client
        // main: the pacer, which also writes the raw senders' frames
        if (t.startsWith("bench-") || t.startsWith("httpclient") || t.contains("websocket") || t.startsWith("im-client")
                || t.equals("main")) return "bench clients";
        if (t.contains("delivery")) return "delivery";
        if (t.contains("sweeper")) return "sweeper";
        if (t.contains("debezium") || t.startsWith("relay") || t.startsWith("pool-") || t.contains("change-event-source")
                || t.contains("im-relay")) return "relay";
        if (t.startsWith("xnio") || t.startsWith("gw-") || t.startsWith("send-lane") || t.startsWith("cursor-") || t.startsWith("read-")
                || t.startsWith("gateway") || t.startsWith("install-")) return "gateway";
        if (t.contains("kafka") || t.contains("raft") || t.contains("quorum") || t.contains("controller")
                || t.contains("reaper") || t.startsWith("executor-") || t.contains("log-cleaner") || t.contains("broker")
                || t.contains("metadata") || t.contains("group-coordinator") || t.contains("transaction")
                || t.startsWith("txnmarkersender") || t.startsWith("addpartitionstotxnsender")) return "broker";
        return "other";
    }

    /**
     * CPU of the postmaster whose command line names {@code dataDir}, and of each of its children,
     * with the kind of each (its process title up to the client address).
     */
    private static void postgresProcesses(Path dataDir, Map<Long, Long> nanos, Map<Long, String> kinds) {
        if (dataDir == null) return;
        String needle = dataDir.toString();
        Map<Long, long[]> stats = new HashMap<>();   // pid -> {ppid, ticks}
        Map<Long, String> titles = new HashMap<>();
        long postmaster = -1;
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path p : procs) {
                try {
                    String stat = Files.readString(p.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long pid = Long.parseLong(p.getFileName().toString());
                    stats.put(pid, new long[] {Long.parseLong(f[1]), Long.parseLong(f[11]) + Long.parseLong(f[12])});
                    String cmdline = new String(Files.readAllBytes(p.resolve("cmdline"))).replace('\0', ' ').trim();
                    titles.put(pid, cmdline);
                    if (postmaster < 0 && cmdline.contains(needle)) postmaster = pid;
                } catch (IOException | RuntimeException gone) {
                    // the process ended while we read it
                }
            }
        } catch (IOException e) {
            return;
        }
        if (postmaster < 0) return;
        for (Map.Entry<Long, long[]> e : stats.entrySet()) {
            long pid = e.getKey();
            if (pid != postmaster && e.getValue()[0] != postmaster) continue;
            nanos.put(pid, e.getValue()[1] * CLOCK_TICK_NANOS);
            kinds.put(pid, pid == postmaster ? "postmaster" : kindOf(titles.getOrDefault(pid, "?")));
        }
    }

    /** "postgres: bench bench 127.0.0.1(4242) idle" -> "bench bench"; "postgres: walwriter" -> "walwriter". */
    static String kindOf(String title) {
        String t = title.startsWith("postgres: ") ? title.substring("postgres: ".length()) : title;
        int addr = t.indexOf(" 127.");
        if (addr < 0) addr = t.indexOf(" [local]");
        return (addr < 0 ? t : t.substring(0, addr)).replaceAll("[0-9]+", "N");
    }
}
