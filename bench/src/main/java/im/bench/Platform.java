package im.bench;

import static im.bench.BenchEnv.deleteTree;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./im platform} as a child process of the bench, black box: a fresh data directory and free
 * ports; {@link #close} stops it and everything it started and deletes the data.
 */
final class Platform implements AutoCloseable {
    /** The admin token every platform the bench starts is given. */
    static final String ADMIN_TOKEN = "bench-admin-token-0123456789";

    final Path dir;
    final Path log;
    final Process proc;
    final long pid;
    /** The first gateway's ports (with --processes: known after {@link #awaitReady}). */
    int gatewayPort;
    int adminPort;
    final int opsPort;
    /** With --processes: every gateway's WebSocket and admin port, gateway-1 first (filled by {@link #awaitReady}). */
    final List<Integer> gatewayPorts = new ArrayList<>();
    final List<Integer> adminPorts = new ArrayList<>();
    /** Started with --processes: one JVM per role, children of {@link #pid}. */
    final boolean processes;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private boolean closed;

    private Platform(Path dir, Path log, Process proc, int gatewayPort, int adminPort, int opsPort, boolean processes) {
        this.dir = dir;
        this.log = log;
        this.proc = proc;
        this.pid = proc.pid();   // ./im execs java: the script's pid is the JVM's
        this.gatewayPort = gatewayPort;
        this.adminPort = adminPort;
        this.opsPort = opsPort;
        this.processes = processes;
        if (!processes) {
            gatewayPorts.add(gatewayPort);
            adminPorts.add(adminPort);
        }
    }

    static Platform start(List<String> launcher, Path workDir, List<String> extraEnv) throws IOException {
        return start(launcher, workDir, extraEnv, List.of());
    }

    /**
     * As above with {@code platformArgs} after {@code platform}. With {@code --processes} every role
     * listens on a free port of its own (IM_*_PORT=0: the platform hands 0 on to each child) and
     * {@link #awaitReady} reads the gateways' ports from their ready lines.
     */
    static Platform start(List<String> launcher, Path workDir, List<String> extraEnv, List<String> platformArgs) throws IOException {
        Path dir = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir, "im-platform-");
        boolean processes = platformArgs.contains("--processes");
        int gw = 0;
        int ops = 0;
        int admin = 0;
        if (!processes) {
            gw = freePort();
            ops = freePort();
            while (ops == gw) ops = freePort();
            admin = freePort();
            while (admin == gw || admin == ops) admin = freePort();
        }
        List<String> cmd = new ArrayList<>(launcher);
        cmd.add("platform");
        cmd.addAll(platformArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("IM_"));   // an unknown IM_* key is an error at start
        env.put("IM_PG_DATA_DIR", dir.resolve("pg").toString());
        env.put("IM_KAFKA_DATA_DIR", dir.resolve("kafka").toString());
        env.put("IM_PG_PORT", "0");
        env.put("IM_KAFKA_PORT", "0");
        env.put("IM_GATEWAY_PORT", String.valueOf(gw));
        env.put("IM_OPS_PORT", String.valueOf(ops));
        env.put("IM_ADMIN_PORT", String.valueOf(admin));
        env.put("IM_ADMIN_TOKEN", ADMIN_TOKEN);
        // every socket comes from 127.0.0.1: lift the per-address limit (default 10,000) above the bench's count
        env.put("IM_MAX_CONNECTIONS_PER_ADDRESS", "1000000");
        for (String kv : extraEnv) env.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        Path log = dir.resolve("platform.log");
        pb.redirectErrorStream(true).redirectOutput(log.toFile());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            deleteTree(dir);
            throw e;
        }
        return new Platform(dir, log, p, gw, admin, ops, processes);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    boolean alive() {
        return proc.isAlive();
    }

    void awaitReady(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        if (processes) {
            awaitProcesses(deadline, timeout);
        } else {
            for (String path : List.of("/healthz", "/readyz")) {
                while (!ok(path)) {
                    if (!proc.isAlive()) throw new IllegalStateException("the platform exited (code " + proc.exitValue() + ") before " + path);
                    if (System.nanoTime() > deadline) throw new IllegalStateException("no 200 from " + path + " within " + timeout.toSeconds() + " s");
                    Thread.sleep(500);
                }
            }
        }
        String text = Files.readString(log);
        if (!processes && !text.contains("IM_READY platform port=" + gatewayPort)) {
            throw new IllegalStateException("the platform is healthy but did not report IM_READY on port " + gatewayPort);
        }
        String cmd = new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline")), StandardCharsets.UTF_8);
        if (!cmd.contains("java")) throw new IllegalStateException("pid " + pid + " is not the platform JVM: " + cmd.replace('\0', ' '));
        if (text.contains("building im.jar")) System.out.println("#   note: ./im rebuilt im.jar before starting (sources newer than the jar)");
    }

    private static final Pattern GATEWAY_READY = Pattern.compile("^\\[gateway-(\\d+)] IM_READY gateway port=(\\d+) admin=(\\d+)", Pattern.MULTILINE);

    /** --processes: the platform prints its own IM_READY line once every role printed one; the gateways' carry their ports. */
    private void awaitProcesses(long deadline, Duration timeout) throws Exception {
        while (!Files.readString(log).contains("IM_READY platform processes=")) {
            if (!proc.isAlive()) throw new IllegalStateException("the platform exited (code " + proc.exitValue() + ") before it was ready");
            if (System.nanoTime() > deadline) throw new IllegalStateException("no IM_READY platform line within " + timeout.toSeconds() + " s");
            Thread.sleep(500);
        }
        Map<Integer, int[]> byIndex = new TreeMap<>();
        Matcher m = GATEWAY_READY.matcher(Files.readString(log));
        while (m.find()) byIndex.putIfAbsent(Integer.parseInt(m.group(1)), new int[] {Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3))});
        if (byIndex.isEmpty()) throw new IllegalStateException("the platform is ready but no gateway printed its ports");
        for (int[] ports : byIndex.values()) {
            gatewayPorts.add(ports[0]);
            adminPorts.add(ports[1]);
        }
        gatewayPort = gatewayPorts.get(0);
        adminPort = adminPorts.get(0);
    }

    private boolean ok(String path) {
        try {
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + opsPort + path))
                    .timeout(Duration.ofSeconds(5)).build();
            return http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** A sample's value from the ops /metrics (first series of that name), or "?". */
    String metric(String name) {
        try {
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + opsPort + "/metrics"))
                    .timeout(Duration.ofSeconds(10)).build();
            for (String line : http.send(req, HttpResponse.BodyHandlers.ofString()).body().split("\n")) {
                if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                    String v = line.substring(line.lastIndexOf(' ') + 1);
                    return v.endsWith(".0") ? v.substring(0, v.length() - 2) : v;
                }
            }
        } catch (IOException | RuntimeException e) {
            return "?";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "?";
    }

    /** The embedded PostgreSQL's postmaster (it daemonizes, so it is not our descendant), or -1. */
    long postmaster() {
        try {
            String first = Files.readAllLines(dir.resolve("pg/postmaster.pid")).get(0).trim();
            return Long.parseLong(first);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * With --processes: the platform's role JVMs (its children running {@code im.launcher.Im <role>}),
     * pid → label: "gateway-i" as the platform named it (from the child's IM_GATEWAY_ID, "gw-i"),
     * other roles numbered in start order (pid order). Read anew at each call: a child that
     * exited is restarted by the platform under a new pid.
     */
    Map<Long, String> roleProcesses() {
        Map<String, List<Long>> byRole = new TreeMap<>();
        Map<Long, String> labels = new TreeMap<>();
        for (Map.Entry<Long, Long> e : Procs.parents().entrySet()) {
            if (e.getValue() != pid) continue;
            String[] args = Procs.cmdline(e.getKey()).split(" ");
            for (int i = 0; i + 1 < args.length; i++) {
                if (!args[i].equals("im.launcher.Im")) continue;
                String role = args[i + 1];
                String id = role.equals("gateway") ? Procs.environ(e.getKey(), "IM_GATEWAY_ID") : null;
                if (id != null && id.matches(".*-\\d+")) labels.put(e.getKey(), "gateway-" + id.substring(id.lastIndexOf('-') + 1));
                else byRole.computeIfAbsent(role, r -> new ArrayList<>()).add(e.getKey());
            }
        }
        byRole.forEach((role, pids) -> {
            Collections.sort(pids);
            for (int i = 0; i < pids.size(); i++) labels.put(pids.get(i), role + "-" + (i + 1));
        });
        return labels;
    }

    /** Every PostgreSQL process of this platform (postmaster and its children) → its kind. */
    Map<Long, String> postgresKinds() {
        long pm = postmaster();
        Map<Long, String> kinds = new HashMap<>();
        if (pm < 0) return kinds;
        for (Map.Entry<Long, Long> e : Procs.parents().entrySet()) {
            long p = e.getKey();
            if (p == pm) kinds.put(p, "postmaster");
            else if (e.getValue() == pm) kinds.put(p, RoleCpu.kindOf(Procs.cmdline(p)));
        }
        return kinds;
    }

    /** CPU ticks of the platform JVM, its descendants and the PostgreSQL processes. */
    Map<Long, Long> processTicks() {
        Set<Long> pids = new HashSet<>();
        pids.add(pid);
        ProcessHandle.of(pid).ifPresent(h -> h.descendants().forEach(d -> pids.add(d.pid())));
        pids.addAll(postgresKinds().keySet());
        Map<Long, Long> m = new HashMap<>();
        for (long p : pids) {
            long t = Procs.ticks(Path.of("/proc/" + p + "/stat"));
            if (t >= 0) m.put(p, t);
        }
        return m;
    }

    double rssMb() {
        return statusKb("VmRSS:") / 1024.0;
    }

    int threadCount() {
        return (int) statusKb("Threads:");
    }

    private long statusKb(String key) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith(key)) return Long.parseLong(line.substring(key.length()).trim().split("\\s+")[0]);
            }
        } catch (IOException | RuntimeException e) {
            // gone
        }
        return -1;
    }

    int openFiles() {
        try (var s = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            return (int) s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    void printLogTail(int lines) {
        try {
            List<String> all = Files.readAllLines(log);
            System.out.println("#   last lines of the platform log:");
            for (String l : all.subList(Math.max(0, all.size() - lines), all.size())) System.out.println("#   | " + l);
        } catch (IOException | RuntimeException e) {
            System.out.println("#   (no platform log: " + e + ")");
        }
    }

    /**
     * Stops the platform: SIGTERM (its shutdown hook stops the roles, Kafka and PostgreSQL), then
     * SIGKILL to whatever of its tree is left; then any process still naming the data directory
     * (the daemonized PostgreSQL), by pid; then the data directory.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        List<ProcessHandle> tree = new ArrayList<>();
        ProcessHandle.of(pid).ifPresent(h -> {
            h.descendants().forEach(tree::add);
            tree.add(h);
        });
        long pm = postmaster();
        proc.destroy();
        try {
            if (!proc.waitFor(60, TimeUnit.SECONDS)) {
                System.err.println("# platform " + pid + " did not stop within 60 s of SIGTERM: killing it");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (ProcessHandle h : tree) if (h.isAlive()) h.destroyForcibly();
        List<ProcessHandle> left = new ArrayList<>();
        if (pm > 0) ProcessHandle.of(pm).filter(h -> Procs.cmdline(pm).contains(dir.toString())).ifPresent(left::add);
        String needle = dir.toString();
        for (long p : Procs.parents().keySet()) {
            if (p != ProcessHandle.current().pid() && Procs.cmdline(p).contains(needle)) ProcessHandle.of(p).ifPresent(left::add);
        }
        for (ProcessHandle h : left) h.destroy();   // SIGTERM: PostgreSQL's smart shutdown; its clients are gone
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (ProcessHandle h : left) {
            while (h.isAlive() && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (h.isAlive()) h.destroyForcibly();
        }
        deleteTree(dir);
    }
}
