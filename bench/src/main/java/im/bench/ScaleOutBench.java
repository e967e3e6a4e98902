package im.bench;

import static im.bench.BenchEnv.daemon;
import static im.bench.BenchEnv.loadAvg;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Subbed;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The capacity model (docs/capacity.md: CPU per send and per push of each role, measured with every
 * role in one JVM) against a platform whose roles run as separate processes, black box: one fresh
 * {@code ./im platform --processes --gateways G --delivery-nodes D} (a child process with its own
 * data directory; it starts one JVM per role and hosts the Kafka broker and the embedded PostgreSQL
 * itself). Users, devices and group conversations of M members are created through the admin API's
 * bulk endpoints; in each group one member sends and {@code --online-per-group} others are connected
 * as raw WebSockets (auth, sub, cumulative ack every {@code --ack-every} pushes or
 * {@code --ack-window-ms}), spread round-robin over the G gateways. Senders send at a fixed rate
 * (open loop, the groups in turn) for a warm-up and then the measured window; after a drain the bench
 * prints the achieved rate, send→push latency, missing pushes and the CPU of every role process
 * from {@code /proc/<pid>/stat} over the window, per 1,000 sends and per 1,000 pushes, beside what
 * the capacity model predicts, and how evenly the gateways and the delivery nodes shared the work.
 */
@Command(name = "scale-out-bench", mixinStandardHelpOptions = true,
        description = "the capacity model vs ./im platform --processes (G gateways, D delivery nodes): CPU per role process per send and per push")
public final class ScaleOutBench implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Open files the harness may use besides its sockets (jars, pipes, the admin client). */
    private static final int SPARE_FILES = 500;
    /** The bulk endpoints' batch (IM_ADMIN_BULK_MAX is 10,000 by default; smaller requests retry cheaper). */
    private static final int CHUNK = 1000;

    /**
     * docs/capacity.md's unit costs: ms of CPU per send in groups of 8 (7 pushes per send), with every
     * role in one JVM and SDK recipients (delivery bench at 900 sends/s).
     */
    static final Map<String, Double> MODEL_MS_PER_SEND = modelTable();
    static final double MODEL_WHOLE_STACK_MS = 2.0;
    static final double MODEL_PUSHES_PER_SEND = 7.0;

    @Option(names = "--one-jvm", description = "run ./im platform with every role in one JVM (the README's command) instead of"
            + " --processes; its CPU is then reported as one process, platform-jvm (broker and roles together)")
    boolean oneJvm;
    @Option(names = "--gateways", description = "gateway processes; default ${DEFAULT-VALUE}")
    int gateways = 2;
    @Option(names = "--delivery-nodes", description = "delivery node processes; default ${DEFAULT-VALUE}")
    int deliveryNodes = 2;
    @Option(names = "--groups", description = "group conversations; default ${DEFAULT-VALUE}")
    int groups = 100;
    @Option(names = "--members", description = "members per group (one of them sends); default ${DEFAULT-VALUE}")
    int members = 8;
    @Option(names = "--online-per-group", description = "recipients connected per group; default members - 1 (all but the sender)")
    Integer onlinePerGroup;
    @Option(names = "--rate", description = "sends per second over all groups (open loop); default ${DEFAULT-VALUE}")
    int rate = 200;
    @Option(names = "--seconds", description = "measured seconds; default ${DEFAULT-VALUE}")
    int seconds = 30;
    @Option(names = "--warmup", description = "seconds of sending before the measured window: long enough for every JVM's JIT to compile"
            + " its hot paths under the load (the report prints the compiler threads' CPU inside the window); default ${DEFAULT-VALUE}")
    int warmup = 10;
    @Option(names = "--idle", description = "seconds of an idle window after the probes (connections held, nothing sent): each process's"
            + " idle CPU, subtracted in the 'above idle' columns (0: none); default ${DEFAULT-VALUE}")
    int idle = 10;
    @Option(names = "--drain", description = "seconds to wait after the window for the pushes still on their way; default ${DEFAULT-VALUE}")
    int drain = 15;
    @Option(names = "--ack-every", description = "a recipient acks at once after this many unacked pushes of a conversation; default ${DEFAULT-VALUE}")
    int ackEvery = 32;
    @Option(names = "--ack-window-ms", description = "otherwise at most this long after the first unacked push; default ${DEFAULT-VALUE}")
    int ackWindowMs = 10;
    @Option(names = "--body-bytes", description = "message body size; default ${DEFAULT-VALUE}")
    int bodyBytes = 200;
    @Option(names = "--platform-env", split = ",", paramLabel = "KEY=VALUE",
            description = "settings for the platform, after the bench's own (IM_RATE_LIMIT=1000000, IM_MAX_INFLIGHT=10000), e.g. IM_SWEEP_MS=1000")
    List<String> platformEnv = new ArrayList<>();
    @Option(names = "--connect-threads", description = "connections being opened at once; default ${DEFAULT-VALUE}")
    int connectThreads = 16;
    @Option(names = "--im", description = "the im launcher; default ${DEFAULT-VALUE} (run from the repository root)")
    String im = "./im";
    @Option(names = "--work-dir", description = "parent of the platform's temporary data directory; default java.io.tmpdir")
    Path workDir;
    @Option(names = "--start-timeout", description = "seconds to wait for every role to be ready; default ${DEFAULT-VALUE}")
    int startTimeout = 300;

    private static volatile Platform currentPlatform;
    private static final List<RawWs> OPEN = new CopyOnWriteArrayList<>();

    public static void main(String[] args) {
        BenchEnv.runMain(new ScaleOutBench(), ScaleOutBench::releaseAll, args);
    }

    private static void releaseAll() {
        for (RawWs c : OPEN) c.close();
        OPEN.clear();
        Platform p = currentPlatform;
        currentPlatform = null;
        if (p != null) p.close();
    }

    private static Map<String, Double> modelTable() {
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("gateway", 0.35);
        m.put("relay", 0.14);
        m.put("delivery", 0.17);
        m.put("broker", 0.31);
        m.put("postgres", 0.61);
        return m;
    }

    private int online() {
        return onlinePerGroup == null ? members - 1 : onlinePerGroup;
    }

    @Override
    public Integer call() throws Exception {
        int online = online();
        if (gateways < 1 || gateways > 16 || deliveryNodes < 1 || deliveryNodes > 16) {
            System.err.println("--gateways and --delivery-nodes: 1 to 16 (what ./im platform --processes accepts)");
            return 2;
        }
        if (oneJvm) {   // one gateway and one delivery node, in the platform's JVM
            gateways = 1;
            deliveryNodes = 1;
        }
        if (groups < 1 || members < 2 || online < 1 || online > members - 1 || rate < 1 || seconds < 1 || warmup < 0
                || drain < 0 || idle < 0 || ackEvery < 1 || ackWindowMs < 0 || bodyBytes < 1 || connectThreads < 1) {
            System.err.println("--groups >= 1, --members >= 2, --online-per-group 1..members-1, --rate/--seconds/--ack-every/--body-bytes >= 1,"
                    + " --warmup/--idle/--drain/--ack-window-ms >= 0");
            return 2;
        }
        for (String kv : platformEnv) {
            if (!kv.startsWith("IM_") || kv.indexOf('=') < 0) {
                System.err.println("--platform-env takes IM_KEY=VALUE, got " + kv);
                return 2;
            }
        }
        long sockets = (long) groups * (online + 1);
        long fdLimit = Procs.openFileLimit();
        if (fdLimit > 0 && sockets + SPARE_FILES > fdLimit) {
            System.err.printf("%d connections (groups x (online + sender)) and ~%d other files exceed this process's %d open files"
                    + " (at most 20,000 on these machines)%n", sockets, SPARE_FILES, fdLimit);
            return 2;
        }
        List<String> env = new ArrayList<>(List.of("IM_RATE_LIMIT=1000000", "IM_MAX_INFLIGHT=10000"));
        env.addAll(platformEnv);   // later values win
        List<String> args = oneJvm ? List.of()
                : List.of("--processes", "--gateways", String.valueOf(gateways), "--delivery-nodes", String.valueOf(deliveryNodes));

        System.out.printf("# scale-out bench: gateways=%d delivery-nodes=%d groups=%d members=%d online-per-group=%d (pushes per send %d)"
                        + " rate=%d/s warmup=%d s measured=%d s drain=%d s ack every %d pushes or %d ms body=%d B platform-env=%s%n",
                gateways, deliveryNodes, groups, members, online, online, rate, warmup, seconds, drain, ackEvery, ackWindowMs,
                bodyBytes, env);
        System.out.printf("# date %s; nproc %d; open files %d; load avg at start %s%n",
                ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME), Runtime.getRuntime().availableProcessors(),
                fdLimit, loadAvg());
        System.out.printf("# platform: %s platform %s%n", im, String.join(" ", args));
        long t0 = System.nanoTime();
        Platform p = Platform.start(List.of(im), workDir, env, args);
        currentPlatform = p;
        try {
            p.awaitReady(Duration.ofSeconds(startTimeout));
            Map<Long, String> roles = p.roleProcesses();
            System.out.printf("# platform pid %d ready in %.1f s; gateways on %s (admin %s); role processes %s; data %s%n", p.pid,
                    secs(t0), p.gatewayPorts, p.adminPorts, roles, p.dir);
            if (p.gatewayPorts.size() != gateways) throw new IllegalStateException("expected " + gateways + " gateways, found " + p.gatewayPorts);
            return run(p, online);
        } catch (Exception | Error e) {
            System.out.printf("# FAILED: %s%n", e);
            p.printLogTail(40);
            throw e;
        } finally {
            for (RawWs c : OPEN) c.close();
            OPEN.clear();
            long s0 = System.nanoTime();
            p.close();
            currentPlatform = null;
            System.out.printf("# platform stopped and its data deleted in %.1f s; load avg at end %s%n", secs(s0), loadAvg());
        }
    }

    // ------------------------------------------------------------------ one run

    /** Per recipient connection: its gateway (index in {@link Platform#gatewayPorts}) and its conversations' cursors. */
    record Recipient(int gateway, Map<String, CumulativeAcks.Conv> convs) {}

    /** What the connections record during a run; send numbers below {@code measuredFrom} are warm-up. */
    final class Run {
        final Cmids ids = new Cmids("so" + Long.toString(System.nanoTime() & 0xffffff, 36));
        final int total;
        final int measuredFrom;
        final int online;
        final long[] intendedNanos;
        final int cap;
        final int[] pIdx;
        final long[] pNanos;
        final AtomicInteger nPush = new AtomicInteger();
        final AtomicLong probePushes = new AtomicLong();
        final AtomicLong sentReplies = new AtomicLong();
        final AtomicLong measuredSent = new AtomicLong();
        final LongAdder[] pushesByGateway;
        final AtomicLong errors = new AtomicLong();
        final AtomicLong repeated = new AtomicLong();
        final AtomicLong repeatedMeasured = new AtomicLong();
        final AtomicLong gaps = new AtomicLong();
        final AtomicLong writeErrors = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();

        Run(int online) {
            this.online = online;
            this.total = (warmup + seconds) * rate;
            this.measuredFrom = warmup * rate;
            this.intendedNanos = new long[total];
            this.cap = total * online + 1024;
            this.pIdx = new int[cap];
            this.pNanos = new long[cap];
            this.pushesByGateway = new LongAdder[gateways];
            for (int i = 0; i < gateways; i++) pushesByGateway[i] = new LongAdder();
        }

        void error(String what) {
            if (errors.incrementAndGet() == 1) firstError.set(what);
        }

        long measuredPushes() {
            int n = Math.min(nPush.get(), cap);
            long c = 0;
            for (int k = 0; k < n; k++) if (pIdx[k] >= measuredFrom) c++;
            return c;
        }
    }

    private int run(Platform p, int online) throws Exception {
        Run run = new Run(online);
        long s0 = System.nanoTime();
        Admin admin = new Admin(p.adminPort);
        Map<String, String> tokens = onboard(admin, online);
        System.out.printf("# onboarding: %d users, %d devices, %d groups of %d through the bulk admin API in %.1f s%n",
                groups * members, groups * members, groups, members, secs(s0));

        ExecutorService io = Executors.newFixedThreadPool(4, daemon("bench-ws-"));
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(daemon("bench-ack-timer"));
        HttpClient http = HttpClient.newBuilder().executor(io).connectTimeout(Duration.ofSeconds(20)).build();
        try {
            long c0 = System.nanoTime();
            List<RawWs> senders = connect(p, http, run, tokens, online, new CumulativeAcks(ackEvery, ackWindowMs, timer));
            System.out.printf("# connected %d recipients (%d per group, round-robin over %d gateways) and %d senders in %.1f s%n",
                    groups * online, online, gateways, senders.size(), secs(c0));
            String body = SendBench.body(bodyBytes);
            probe(run, senders, body);
            CpuWindow idleCpu = null;
            if (idle > 0) {
                idleCpu = new CpuWindow(p);
                Thread.sleep(2000);   // the probes' acks and cursor writes
                idleCpu.begin();
                Thread.sleep(TimeUnit.SECONDS.toMillis(idle));
                idleCpu.end();
            }

            CpuWindow cpu = new CpuWindow(p);
            pace(run, senders, body, cpu);
            long sendsEnd = System.nanoTime();
            long expected = (long) (run.total - run.measuredFrom) * online;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(drain);
            while (System.nanoTime() < deadline && run.measuredPushes() < expected) Thread.sleep(20);
            long drained = System.nanoTime();
            report(run, cpu, idleCpu, expected);
            cursorsAtHead(admin, online, sendsEnd, drained);
            return 0;
        } finally {
            for (RawWs c : OPEN) c.close();
            OPEN.clear();
            timer.shutdownNow();
            io.shutdownNow();
        }
    }

    /**
     * Polls the groups' cursors (GET /admin/conversations/{conv}/cursors, what the database holds)
     * until every online recipient's delivered cursor is its group's head, and prints how long that
     * took after the last send and after the drain ended (the last push arrived), or that it did not
     * happen within 30 s.
     */
    private void cursorsAtHead(Admin admin, int online, long sendsEnd, long drained) throws Exception {
        long deadline = drained + TimeUnit.SECONDS.toNanos(30);
        int behind = -1;
        while (System.nanoTime() < deadline) {
            behind = 0;
            for (int g = 0; g < groups; g++) {
                JsonNode cc = admin.get("/admin/conversations/g-" + g + "/cursors");
                long head = cc.get("head").asLong();
                for (JsonNode d : cc.get("devices")) {
                    String id = d.get("device").asText();
                    int m = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
                    if (m >= 1 && m <= online && d.get("delivered").asLong() < head) behind++;
                }
            }
            if (behind == 0) {
                long now = System.nanoTime();
                System.out.printf(Locale.ROOT, "every online recipient's cursor at its group's head (database): %.1f s after the last send,"
                        + " %.1f s after the last push arrived%n", (now - sendsEnd) / 1e9, (now - drained) / 1e9);
                return;
            }
            Thread.sleep(100);
        }
        System.out.printf("cursors: %d online recipients still behind their group's head 30 s after the drain%n", behind);
    }

    // ------------------------------------------------------------------ onboarding through the admin API

    private static String user(int g, int m) {
        return "u-" + g + "-" + m;
    }

    private static String device(int g, int m) {
        return "d-" + g + "-" + m;
    }

    /**
     * Every member a user with one device (members who stay offline too: the routing state knows
     * them), every group {@code g-<i>}; returns the tokens of the senders (member 0) and of the
     * {@code online} recipients (members 1..online) by device id.
     */
    private Map<String, String> onboard(Admin admin, int online) throws Exception {
        List<int[]> all = new ArrayList<>(groups * members);
        for (int g = 0; g < groups; g++) for (int m = 0; m < members; m++) all.add(new int[] {g, m});
        for (int from = 0; from < all.size(); from += CHUNK) {
            ObjectNode body = JSON.createObjectNode();
            ArrayNode us = body.putArray("users");
            for (int[] gm : all.subList(from, Math.min(all.size(), from + CHUNK))) {
                us.addObject().put("user", user(gm[0], gm[1])).put("name", user(gm[0], gm[1]));
            }
            admin.post("/admin/users/bulk", body, false);
        }
        Map<String, String> tokens = new HashMap<>();
        for (int from = 0; from < all.size(); from += CHUNK) {
            ObjectNode body = JSON.createObjectNode();
            ArrayNode ds = body.putArray("devices");
            for (int[] gm : all.subList(from, Math.min(all.size(), from + CHUNK))) {
                ds.addObject().put("user", user(gm[0], gm[1])).put("device", device(gm[0], gm[1]));
            }
            JsonNode r = admin.post("/admin/devices/bulk", body, false);
            for (JsonNode d : r.get("devices")) tokens.put(d.get("device").asText(), d.get("token").asText());
        }
        ExecutorService pool = Executors.newFixedThreadPool(4, daemon("bench-setup-"));
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int g = 0; g < groups; g++) {
                int group = g;
                fs.add(pool.submit(() -> {
                    for (int from = 0; from < members; from += CHUNK) {
                        ObjectNode body = JSON.createObjectNode();
                        ArrayNode ms = body.putArray(from == 0 ? "members" : "users");
                        for (int m = from; m < Math.min(members, from + CHUNK); m++) ms.add(user(group, m));
                        if (from == 0) admin.post("/admin/conversations", body.put("conv", "g-" + group).put("kind", "group"), true);
                        else admin.post("/admin/conversations/g-" + group + "/members", body, false);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) f.get(600, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        Map<String, String> needed = new HashMap<>();
        for (int g = 0; g < groups; g++) {
            for (int m = 0; m <= online; m++) {
                String t = tokens.get(device(g, m));
                if (t == null) throw new IllegalStateException("no token for " + device(g, m) + " (registered before?)");
                needed.put(device(g, m), t);
            }
        }
        return needed;
    }

    // ------------------------------------------------------------------ connections

    /** Recipients first (auth, sub, ack what sub reported), round-robin over the gateways; then one sender per group. */
    private List<RawWs> connect(Platform p, HttpClient http, Run run, Map<String, String> tokens, int online,
                                CumulativeAcks acks) throws Exception {
        List<URI> uris = new ArrayList<>();
        for (int port : p.gatewayPorts) uris.add(URI.create("ws://127.0.0.1:" + port + "/ws"));
        ExecutorService pool = Executors.newFixedThreadPool(connectThreads, daemon("bench-connect-"));
        try {
            List<Future<?>> fs = new ArrayList<>();
            int k = 0;
            for (int g = 0; g < groups; g++) {
                for (int m = 1; m <= online; m++) {
                    int gw = k++ % gateways;
                    String token = tokens.get(device(g, m));
                    fs.add(pool.submit(() -> {
                        RawWs c = RawWs.open(http, uris.get(gw), run.writeErrors);
                        OPEN.add(c);
                        Subbed s = c.authAndSub(token, true);
                        c.state = new Recipient(gw, CumulativeAcks.holdSubbed(c, s));
                        c.handler((conn, f, nanos, micros) -> onRecipientFrame(run, conn, f, nanos, acks));
                        return null;
                    }));
                }
            }
            long limitS = 60 + fs.size() / 50;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(limitS);
            for (Future<?> f : fs) f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } finally {
            pool.shutdownNow();
        }
        List<RawWs> senders = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            RawWs c = RawWs.open(http, uris.get(g % gateways), run.writeErrors);
            OPEN.add(c);
            c.authAndSub(tokens.get(device(g, 0)), false);
            c.handler((conn, f, nanos, micros) -> onSenderFrame(run, f));
            senders.add(c);
        }
        return senders;
    }

    private void onSenderFrame(Run run, ServerFrame f) {
        if (f instanceof Sent s) {
            if (s.dup()) run.error("dup reply " + s.rid());
            if (s.rid().startsWith("s")) {
                run.sentReplies.incrementAndGet();
                if (Integer.parseInt(s.rid().substring(1)) >= run.measuredFrom) run.measuredSent.incrementAndGet();
            }
        } else if (f instanceof ErrorFrame e) {
            run.error("sender: " + e.code() + " " + e.msg());
        }
    }

    private void onRecipientFrame(Run run, RawWs conn, ServerFrame f, long nanos, CumulativeAcks acks) {
        if (f instanceof EventPush ep) {
            Event ev = ep.ev();
            Recipient r = (Recipient) conn.state;
            CumulativeAcks.Outcome o = acks.onPush(conn, r.convs(), ev, false);
            int i = Event.MSG.equals(ev.kind()) ? run.ids.index(ev.cmid()) : -2;
            if (o == CumulativeAcks.Outcome.REPEATED) {
                run.repeated.incrementAndGet();
                if (i >= run.measuredFrom) run.repeatedMeasured.incrementAndGet();
                return;
            }
            if (o == CumulativeAcks.Outcome.GAP) run.gaps.incrementAndGet();
            if (i == -1) {
                run.probePushes.incrementAndGet();
            } else if (i >= 0) {
                int k = run.nPush.getAndIncrement();
                if (k < run.cap) {
                    run.pIdx[k] = i;
                    run.pNanos[k] = nanos;
                }
                if (i >= run.measuredFrom) run.pushesByGateway[r.gateway()].increment();
            }
        } else if (f instanceof ErrorFrame e) {
            run.error("recipient: " + e.code() + " " + e.msg());
        }
    }

    /** One message per group until every recipient got it: the routes are in place before anything is timed. */
    private void probe(Run run, List<RawWs> senders, String body) throws InterruptedException {
        long p0 = System.nanoTime();
        long recipients = (long) groups * run.online;
        boolean ready = false;
        for (int attempt = 0; attempt < 30 && !ready; attempt++) {
            long before = run.probePushes.get();
            for (int g = 0; g < groups; g++) {
                senders.get(g).send(new Send("p" + attempt + "-" + g, "g-" + g, run.ids.probe(attempt, g), body));
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() < until && run.probePushes.get() - before < recipients) Thread.sleep(10);
            ready = run.probePushes.get() - before >= recipients;
        }
        System.out.printf("# routes %s after %.1f s of probes%n", ready ? "ready (every recipient got a probe push)" : "NOT complete",
                secs(p0));
    }

    /** The open-loop pacer; takes the CPU snapshots at the window's edges (the first measured send, the end of the last period). */
    private void pace(Run run, List<RawWs> senders, String body, CpuWindow cpu) {
        long period = 1_000_000_000L / rate;
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        for (int i = 0; i < run.total; i++) {
            long target = start + i * period;
            long now;
            while ((now = System.nanoTime()) < target) LockSupport.parkNanos(target - now);
            if (i == run.measuredFrom) cpu.begin();
            run.intendedNanos[i] = target;
            int g = i % groups;
            senders.get(g).send(new Send("s" + i, "g-" + g, run.ids.send(i), body));
        }
        long end = start + run.total * period;
        long now;
        while ((now = System.nanoTime()) < end) LockSupport.parkNanos(end - now);
        cpu.end();
    }

    // ------------------------------------------------------------------ CPU per role process

    /**
     * CPU ticks of every process of the platform at the window's edges: each role JVM (labelled by
     * {@link Platform#roleProcesses}), the platform JVM itself (which hosts the Kafka broker: "broker"),
     * PostgreSQL (postmaster and its backends, summed) and this harness.
     */
    static final class CpuWindow {
        private final Platform p;
        private final long tick = Procs.clockTick();
        private Map<Long, String> labels0;
        private Map<Long, Long> ticks0;
        private Map<Long, String> labels1;
        private Map<Long, Long> ticks1;
        private Map<Long, Map<Long, Long>> jit0;
        private Map<Long, Map<Long, Long>> jit1;
        private long beginNanos;
        private long endNanos;

        CpuWindow(Platform p) {
            this.p = p;
        }

        void begin() {
            beginNanos = System.nanoTime();
            labels0 = labels();
            ticks0 = ticks(labels0);
            jit0 = jit(labels0);
        }

        void end() {
            labels1 = labels();
            ticks1 = ticks(labels1);
            jit1 = jit(labels1);
            endNanos = System.nanoTime();
        }

        double seconds() {
            return (endNanos - beginNanos) / 1e9;
        }

        private Map<Long, String> labels() {
            Map<Long, String> l = new LinkedHashMap<>(p.roleProcesses());
            l.put(p.pid, l.isEmpty() ? "platform-jvm" : "broker");   // no role processes: every role is in it
            for (long pg : p.postgresKinds().keySet()) l.put(pg, "postgres");
            l.put(ProcessHandle.current().pid(), "harness");
            return l;
        }

        private static Map<Long, Long> ticks(Map<Long, String> labels) {
            Map<Long, Long> t = new HashMap<>();
            for (long pid : labels.keySet()) {
                long v = Procs.ticks(Path.of("/proc/" + pid + "/stat"));
                if (v >= 0) t.put(pid, v);
            }
            return t;
        }

        /** Per JVM of the platform and the harness (not PostgreSQL): its JIT compiler threads' ticks, per thread. */
        private static Map<Long, Map<Long, Long>> jit(Map<Long, String> labels) {
            Map<Long, Map<Long, Long>> j = new HashMap<>();
            labels.forEach((pid, label) -> {
                if (!label.equals("postgres")) j.put(pid, Procs.jitThreadTicks(pid));
            });
            return j;
        }

        /**
         * ms of the JIT compiler threads per label over the window (threads that ended inside it are
         * missed, so a lower bound). Part of {@link #msByLabel}: a large share means the JVMs were still
         * compiling their hot paths, i.e. a warm-up too short for a steady-state figure.
         */
        Map<String, Double> jitMsByLabel() {
            Map<String, Double> ms = new java.util.TreeMap<>(ScaleOutBench::byRole);
            jit1.forEach((pid, threads) -> {
                Map<Long, Long> before = jit0.getOrDefault(pid, Map.of());
                long t = 0;
                for (Map.Entry<Long, Long> e : threads.entrySet()) t += e.getValue() - before.getOrDefault(e.getKey(), 0L);
                ms.merge(labels1.get(pid), t * 1000.0 / tick, Double::sum);
            });
            return ms;
        }

        /** ms of CPU per label over the window; a process born inside it counts from 0 (named in {@link #changes}). */
        Map<String, Double> msByLabel() {
            Map<String, Double> ms = new java.util.TreeMap<>(ScaleOutBench::byRole);
            for (Map.Entry<Long, Long> e : ticks1.entrySet()) {
                long before = ticks0.getOrDefault(e.getKey(), 0L);
                ms.merge(labels1.get(e.getKey()), (e.getValue() - before) * 1000.0 / tick, Double::sum);
            }
            return ms;
        }

        /** Role processes that came or went during the window (a role JVM the platform restarted), or "". */
        String changes() {
            List<String> c = new ArrayList<>();
            for (Map.Entry<Long, String> e : labels1.entrySet()) {
                if (!labels0.containsKey(e.getKey()) && !e.getValue().equals("postgres")) c.add("+" + e.getValue() + "(" + e.getKey() + ")");
            }
            for (Map.Entry<Long, String> e : labels0.entrySet()) {
                if (!labels1.containsKey(e.getKey()) && !e.getValue().equals("postgres")) c.add("-" + e.getValue() + "(" + e.getKey() + ")");
            }
            return String.join(" ", c);
        }
    }

    private static final List<String> ROLE_ORDER = List.of("gateway", "delivery", "relay", "sweeper", "broker", "platform-jvm", "postgres", "harness");

    /** gateway-1, gateway-2, delivery-1, ..., relay-*, sweeper-*, broker, postgres, harness; anything else last. */
    static int byRole(String a, String b) {
        int ra = rank(a);
        int rb = rank(b);
        return ra != rb ? Integer.compare(ra, rb) : a.compareTo(b);
    }

    private static int rank(String label) {
        int i = ROLE_ORDER.indexOf(role(label));
        return i < 0 ? ROLE_ORDER.size() : i;
    }

    /** "gateway-2" → "gateway". */
    static String role(String label) {
        return label.replaceFirst("-\\d+$", "");
    }

    // ------------------------------------------------------------------ the report

    private void report(Run run, CpuWindow cpu, CpuWindow idleCpu, long expected) {
        double windowS = cpu.seconds();
        long sends = run.total - run.measuredFrom;
        Histogram lat = new Histogram(TimeUnit.MINUTES.toMicros(10), 3);
        int n = Math.min(run.nPush.get(), run.cap);
        long pushes = 0;
        for (int k = 0; k < n; k++) {
            int i = run.pIdx[k];
            if (i < run.measuredFrom) continue;
            pushes++;
            lat.recordValue(Math.min(lat.getHighestTrackableValue(), Math.max(1, (run.pNanos[k] - run.intendedNanos[i]) / 1000)));
        }
        System.out.printf("%n# --- results (window %.1f s; load avg %s)%n", windowS, loadAvg());
        System.out.printf(Locale.ROOT, "sends/s achieved %.1f (intended %d; %d of %d measured sends answered 'sent'); pushes/s %.1f%n",
                run.measuredSent.get() / windowS, rate, run.measuredSent.get(), sends, pushes / windowS);
        System.out.printf(Locale.ROOT, "send->push (intended send time to the push's first byte) p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d pushes%n",
                lat.getValueAtPercentile(50) / 1000.0, lat.getValueAtPercentile(99) / 1000.0, lat.getMaxValue() / 1000.0, lat.getTotalCount());
        System.out.printf("missing pushes after a %d s drain: %d of %d; repeated pushes %d of measured sends (%d over the whole run, with the join events the relay pushed after sub); gaps %d;"
                        + " error replies %d%s; failed socket writes %d; undecodable frames %d%n", drain, expected - pushes, expected,
                run.repeatedMeasured.get(), run.repeated.get(), run.gaps.get(), run.errors.get(),
                run.errors.get() > 0 ? " (first: " + run.firstError.get() + ")" : "", run.writeErrors.get(), RawWs.HANDLER_ERRORS.get());

        Map<String, Double> ms = cpu.msByLabel();
        // each process's idle CPU, as ms over a window as long as the measured one
        Map<String, Double> idleMs = new HashMap<>();
        if (idleCpu != null) idleCpu.msByLabel().forEach((l, v) -> idleMs.put(l, v / idleCpu.seconds() * windowS));
        String changes = cpu.changes();
        if (!changes.isEmpty()) System.out.println("# role processes changed during the window (a restart?): " + changes);
        double k = run.online / MODEL_PUSHES_PER_SEND;
        System.out.printf("%n# CPU per process over the window, from /proc/<pid>/stat; idle%% = the same process with nothing sent (%s)."
                + " Model: docs/capacity.md's ms per send at groups of 8 (7 pushes per send, all roles in one JVM, SDK recipients),"
                + " gateway and delivery scaled by pushes per send / 7 (here x%.2f), the others per send; x_model = measured / model,"
                + " x_above_idle = (measured - idle) / model%n", idleCpu == null ? "not measured: --idle 0"
                : String.format(Locale.ROOT, "%.1f s after the probes", idleCpu.seconds()), k);
        System.out.printf("%-11s %9s %7s %7s %12s %12s %14s %8s %12s%n", "process", "cpu_ms", "%core", "idle%", "ms/1k_sends",
                "ms/1k_pushes", "model_ms/1k_s", "x_model", "x_above_idle");
        Map<String, Double> byRole = new LinkedHashMap<>();
        Map<String, Double> idleByRole = new LinkedHashMap<>();
        for (Map.Entry<String, Double> e : ms.entrySet()) {
            byRole.merge(role(e.getKey()), e.getValue(), Double::sum);
            idleByRole.merge(role(e.getKey()), idleMs.getOrDefault(e.getKey(), Double.NaN), Double::sum);
            System.out.println(row(e.getKey(), e.getValue(), idleMs.getOrDefault(e.getKey(), Double.NaN), windowS, sends, pushes, Double.NaN));
        }
        System.out.println("# by role (the processes of a role summed), against the model");
        double platform = 0;
        double platformIdle = 0;
        double platformModel = 0;
        for (Map.Entry<String, Double> e : byRole.entrySet()) {
            Double perSend = MODEL_MS_PER_SEND.get(e.getKey());
            double model = perSend == null ? Double.NaN : perSend * 1000 * (isPushRole(e.getKey()) ? k : 1);
            double idleRole = idleByRole.get(e.getKey());
            if (!e.getKey().equals("harness")) {
                platform += e.getValue();
                platformIdle += idleRole;
                if (!Double.isNaN(model)) platformModel += model;
            }
            System.out.println(row(e.getKey(), e.getValue(), idleRole, windowS, sends, pushes, model));
        }
        System.out.println(row("platform", platform, platformIdle, windowS, sends, pushes, platformModel)
                + "   (all but the harness; the model has no sweeper)");
        double rest = MODEL_WHOLE_STACK_MS - MODEL_MS_PER_SEND.values().stream().mapToDouble(Double::doubleValue).sum();
        double wholeModel = platformModel + rest * 1000 * k;   // clients, JIT, GC: scaled by pushes like the clients' work
        System.out.println(row("whole", platform + byRole.getOrDefault("harness", 0.0), platformIdle + idleByRole.getOrDefault("harness", Double.NaN),
                windowS, sends, pushes, wholeModel) + "   (platform + harness vs the model's 2.0 ms per send, its rest scaled by pushes)");

        Map<String, Double> jit = cpu.jitMsByLabel();
        double jitTotal = jit.values().stream().mapToDouble(Double::doubleValue).sum();
        StringBuilder jitLine = new StringBuilder();
        jit.forEach((l, v) -> jitLine.append(String.format(Locale.ROOT, " %s %.0f ms (%.0f %% of its CPU);", l, v, 100 * v / ms.getOrDefault(l, Double.NaN))));
        System.out.printf(Locale.ROOT, "JIT compilation inside the window (C1/C2 compiler threads, part of the CPU above):%s total %.1f %% of a core"
                + "%s%n", jitLine, 100 * jitTotal / 1000 / windowS,
                jitTotal > 0.05 * ms.values().stream().mapToDouble(Double::doubleValue).sum()
                        ? " -- over 5 % of all CPU: the JVMs were still warming up; a longer --warmup gives the steady state" : "");

        System.out.println();
        split("gateways", ms, idleMs, "gateway", run.pushesByGateway, pushes);
        split("delivery nodes", ms, idleMs, "delivery", null, pushes);
        if (groups < 4 * deliveryNodes) {
            System.out.printf("# (a conversation's events go to one partition, owned by one delivery node: with %d group(s) the delivery"
                    + " split says little)%n", groups);
        }
    }

    private static boolean isPushRole(String role) {
        return role.equals("gateway") || role.equals("delivery");
    }

    private static String row(String label, double cpuMs, double idleMs, double windowS, long sends, long pushes, double modelPer1kSends) {
        double per1kSends = sends == 0 ? Double.NaN : cpuMs / (sends / 1000.0);
        double per1kPushes = pushes == 0 ? Double.NaN : cpuMs / (pushes / 1000.0);
        double above = sends == 0 ? Double.NaN : (cpuMs - idleMs) / (sends / 1000.0);
        return String.format(Locale.ROOT, "%-11s %9.0f %7.1f %7s %12s %12s %14s %8s %12s", label, cpuMs, cpuMs / 10 / windowS,
                f1(idleMs / 10 / windowS), f1(per1kSends), f1(per1kPushes), f1(modelPer1kSends), f2(per1kSends / modelPer1kSends),
                f2(above / modelPer1kSends));
    }

    /**
     * How the processes of one role shared its CPU (and its CPU above idle, and for gateways the pushes
     * the harness counted per gateway): "even" when every share of the CPU is within 10 points of 1/N.
     */
    private static void split(String what, Map<String, Double> ms, Map<String, Double> idleMs, String role, LongAdder[] pushesBy, long pushes) {
        List<String> labels = ms.keySet().stream().filter(l -> role(l).equals(role)).toList();
        double sum = labels.stream().mapToDouble(ms::get).sum();
        double sumAbove = labels.stream().mapToDouble(l -> ms.get(l) - idleMs.getOrDefault(l, Double.NaN)).sum();
        StringBuilder b = new StringBuilder();
        boolean even = sum > 0;
        for (int i = 0; i < labels.size(); i++) {
            double share = sum > 0 ? ms.get(labels.get(i)) / sum : Double.NaN;
            even &= Math.abs(share - 1.0 / labels.size()) <= 0.10;
            double above = ms.get(labels.get(i)) - idleMs.getOrDefault(labels.get(i), Double.NaN);
            b.append(String.format(Locale.ROOT, " %s %.0f%% of the CPU (%s%% above idle)", labels.get(i), 100 * share,
                    f1(100 * above / sumAbove)));
            if (pushesBy != null && i < pushesBy.length) {
                b.append(String.format(Locale.ROOT, ", %.0f%% of the pushes", pushes == 0 ? Double.NaN : 100.0 * pushesBy[i].sum() / pushes));
            }
            b.append(';');
        }
        System.out.printf("split of the %s:%s %s%n", what, b, labels.size() < 2 ? "(one process)"
                : even ? "about even (each within 10 points of 1/" + labels.size() + ")" : "UNEVEN (a share more than 10 points from 1/" + labels.size() + ")");
    }

    private static String f1(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String f2(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
    }


    private static double secs(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
