package im.bench;

import static im.bench.BenchEnv.deleteTree;
import static im.bench.BenchEnv.daemon;
import static im.bench.BenchEnv.loadAvg;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ConvState;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Limits;
import im.protocol.Sync;
import im.protocol.Synced;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.knowm.xchart.XYChart;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What idle subscribed connections cost a running platform, black box: for each size N, a fresh
 * {@code ./im platform} (a child process with its own temporary data directory and free ports) gets
 * N users with one device each, every device in exactly one direct conversation with a shared sender
 * user {@code u-sender} (the directory has no per-user membership limit; a group holds at most
 * {@code IM_MAX_GROUP_MEMBERS}). N WebSockets (the JDK client) {@code auth}, {@code sub}, ack the head {@code subbed}
 * reported (the two join events of their conversation) and then stay silent. After a settle period,
 * over a window: CPU of the platform JVM (which also runs the Kafka broker), its child processes and
 * the embedded PostgreSQL (which daemonizes: found by its data directory's {@code postmaster.pid}) from
 * {@code /proc}; heap used after a full GC ({@code jcmd GC.run}, {@code GC.heap_info}); RSS of the
 * platform JVM. Then push latency: messages from the sender's device (connected, never subscribed,
 * so it registers no interest) into random idle devices' conversations, send → {@code event} on that
 * idle connection. The empty platform (N = 0) is measured the same way first, for subtraction.
 *
 * <p>Why the idle devices ack once: a device whose cursor stays below its conversation's head is a
 * lagging pair to the sweeper, which hints it every {@code IM_HINT_BACKOFF_MS} (2 s) for as long as it
 * is online; without the ack the "idle" window would measure N devices being hinted, not N idle
 * connections ({@code --no-ack} shows that case). After each measured push the device acks it too.
 *
 * <p>{@code --reconnect} adds a reconnect storm per size, after the pushes: the N connections close normally
 * (until the gateway's {@code im_connections_open} is 0), the sender sends {@code --pending} messages into each
 * conversation (at most {@link #SEND_CONCURRENCY} in flight, retriable refusals resent), then the N devices
 * reconnect spread uniformly over {@code --reconnect-window-s}: {@code auth}, {@code sub}, {@code sync} from the
 * seq each held (every page), {@code ack} the head; a retriable error ({@code RATE_LIMITED}, {@code UNAVAILABLE},
 * {@code INTERNAL} at most 5 times) is retried after 100-500 ms. It reports the time until every device acked,
 * per-device connect → ack percentiles, failures, retries, devices not converged within {@code --converge-timeout-s},
 * and verifies that each device synced exactly its missed messages, contiguous up to the head.
 */
@Command(name = "connections-bench", mixinStandardHelpOptions = true,
        description = "idle subscribed WebSocket connections against ./im platform: CPU, heap, RSS and push latency per N")
public final class ConnectionsBench implements Callable<Integer> {
    private static final String SENDER_USER = "u-sender";
    private static final String SENDER_DEVICE = "d-sender";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern HEAP = Pattern.compile("heap\\s+total (\\d+)K, used (\\d+)K");
    private static final Pattern METASPACE = Pattern.compile("Metaspace\\s+used (\\d+)K, committed (\\d+)K");
    private static final Pattern THREAD_LINE = Pattern.compile("^\"(.*)\" .*\\bnid=(0x[0-9a-fA-F]+|\\d+)\\b");
    private static final int MAX_N = 18_000;   // the machine's 20,000 open files per process, minus headroom

    @Option(names = "--sizes", split = ",", description = "connection counts N, each on a fresh platform; default ${DEFAULT-VALUE}")
    List<Integer> sizes = List.of(1000, 5000, 15000);
    @Option(names = "--settle", description = "seconds between the last subscription and the window; default ${DEFAULT-VALUE}")
    int settle = 60;
    @Option(names = "--window", description = "seconds of the CPU window; default ${DEFAULT-VALUE}")
    int window = 60;
    @Option(names = "--messages", description = "measured pushes per size; default ${DEFAULT-VALUE}")
    int messages = 100;
    @Option(names = "--warmup-messages", description = "pushes before the measured ones, not counted; default ${DEFAULT-VALUE}")
    int warmupMessages = 10;
    @Option(names = "--setup-threads", description = "concurrent admin API requests; default ${DEFAULT-VALUE}")
    int setupThreads = 16;
    @Option(names = "--connect-threads", description = "connections being opened at once; default ${DEFAULT-VALUE}")
    int connectThreads = 32;
    @Option(names = "--threads", description = "busiest platform threads printed per size (0: none); default ${DEFAULT-VALUE}")
    int topThreads = 12;
    @Option(names = "--no-empty", description = "skip the empty platform (N = 0)")
    boolean noEmpty;
    @Option(names = "--groups-per-device", description = "besides its direct conversation, each device is in K groups of 10"
            + " (created with the bulk admin API, no messages): how idle cost and sub grow with conversations per device;"
            + " default ${DEFAULT-VALUE}")
    int groupsPerDevice;
    /** How long each device's whole paged sub took (first sub sent to the last page's subbed received), ns; printed per size. */
    private final List<Long> subNanos = new CopyOnWriteArrayList<>();

    @Option(names = "--no-ack", description = "idle devices do not ack the join events (they stay lagging and get hinted)")
    boolean noAck;
    @Option(names = "--im", description = "the im launcher; default ${DEFAULT-VALUE} (run from the repository root)")
    String im = "./im";
    @Option(names = "--pin-jar", description = "copy launcher/target/im.jar once at start and run every platform as"
            + " `java -jar <copy> platform` (what ./im execs), so that every size runs the same code even if the tree is"
            + " edited and ./im would rebuild the jar in between")
    boolean pinJar;
    @Option(names = "--platform-env", split = ",", paramLabel = "KEY=VALUE",
            description = "extra settings for the platform, e.g. IM_RATE_LIMIT=1000 (none by default)")
    List<String> platformEnv = new ArrayList<>();
    @Option(names = "--work-dir", description = "parent of the temporary data directories; default java.io.tmpdir")
    Path workDir;
    @Option(names = "--start-timeout", description = "seconds to wait for /healthz and /readyz; default ${DEFAULT-VALUE}")
    int startTimeout = 300;
    @Option(names = "--seed", description = "random seed of the push targets; default ${DEFAULT-VALUE}")
    long seed = 42;
    @Option(names = "--reconnect", description = "after the pushes: a reconnect storm (close all N, send --pending messages to"
            + " each while offline, reconnect all N over --reconnect-window-s: auth, sub, sync, ack the head)")
    boolean reconnect;
    @Option(names = "--pending", description = "messages sent to each offline device before the reconnect storm; default ${DEFAULT-VALUE}")
    int pendingMsgs = 3;
    @Option(names = "--reconnect-window-s", description = "seconds over which the N reconnects are spread uniformly; default ${DEFAULT-VALUE}")
    int reconnectWindowS = 5;
    @Option(names = "--converge-timeout-s", description = "seconds from the storm's start within which every device must have"
            + " acked its head; default ${DEFAULT-VALUE}")
    int convergeTimeoutS = 60;
    @Option(names = "--chart", description = "also write a PNG (XChart) of the cost per connection against N to this file:"
            + " idle CPU and heap above the empty platform, push p50/p99")
    Path chart;
    @Option(names = "--chart-title", description = "the chart's title, default ${DEFAULT-VALUE}")
    String chartTitle = "What an idle subscribed connection costs as N grows";

    private final long clockTick = Procs.clockTick();
    /** The command that starts a platform (its arguments follow). */
    private List<String> launcher;
    private Path pinnedDir;
    private final List<Result> results = new ArrayList<>();
    /** What the shutdown hook must release when the harness is interrupted. */
    private static volatile Platform currentPlatform;
    private static volatile Path pinnedJarDir;
    private static final List<IdleConn> OPEN = new CopyOnWriteArrayList<>();

    // counters shared by the connections of the current size
    private final AtomicLong unexpectedCloses = new AtomicLong();
    private final AtomicLong wsErrors = new AtomicLong();
    private final AtomicLong decodeErrors = new AtomicLong();
    private final AtomicInteger phase = new AtomicInteger();   // 0 connect, 1 idle (settle + window), 2 pushes, 3 reconnect
    private final List<Map<String, LongAdder>> frames = List.of(new ConcurrentHashMap<>(), new ConcurrentHashMap<>(),
            new ConcurrentHashMap<>(), new ConcurrentHashMap<>());
    private volatile Pending pending;

    public static void main(String[] args) {
        BenchEnv.runMain(new ConnectionsBench(), ConnectionsBench::releaseAll, args);
    }

    private static void releaseAll() {
        for (IdleConn c : OPEN) c.close();
        OPEN.clear();
        Platform p = currentPlatform;
        currentPlatform = null;
        if (p != null) p.close();
        Path pinned = pinnedJarDir;
        pinnedJarDir = null;
        if (pinned != null) deleteTree(pinned);
    }

    /** One size's figures; NaN where not measured. */
    record Result(int n, double setupS, double connectS, int errors, double cpuPct, double jitPct, double pgPct,
                  double heapMb, double rssMb, double p50, double p99, double max, int missed, Storm storm) {
        /** CPU without the platform JVM's JIT compiler threads (still compiling after the settle; noise here). */
        double cpuNoJit() {
            return cpuPct - jitPct;
        }

        /** {@link #cpuNoJit} above the empty platform's, % of one core per 1,000 connections. */
        double cpuPer1k(Result empty) {
            return (cpuNoJit() - empty.cpuNoJit()) / n * 1000;
        }

        /** Heap used after a full GC above the empty platform's, KB per connection. */
        double heapKbPerConn(Result empty) {
            return (heapMb - empty.heapMb) * 1024 / n;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (sizes.isEmpty() || sizes.stream().anyMatch(n -> n < 1 || n > MAX_N)) {
            System.err.println("--sizes: each from 1 to " + MAX_N + " (open files are capped at 20,000 per process)");
            return 2;
        }
        if (settle < 0 || window < 1 || messages < 1 || warmupMessages < 0 || setupThreads < 1 || connectThreads < 1) {
            System.err.println("--settle >= 0, --window >= 1, --messages >= 1, --warmup-messages >= 0, thread counts >= 1");
            return 2;
        }
        if (pendingMsgs < 1 || pendingMsgs > 1000 || reconnectWindowS < 0 || convergeTimeoutS < 1) {
            System.err.println("--pending 1..1000, --reconnect-window-s >= 0, --converge-timeout-s >= 1");
            return 2;
        }
        for (String kv : platformEnv) {
            if (!kv.startsWith("IM_") || kv.indexOf('=') < 0) {
                System.err.println("--platform-env takes IM_KEY=VALUE, got " + kv);
                return 2;
            }
        }
        long fdLimit = Procs.openFileLimit();
        int largest = Collections.max(sizes);
        if (fdLimit > 0 && fdLimit < largest + 500L) {
            System.err.printf("this process may open %d files; N=%d needs about %d (raise ulimit -n)%n", fdLimit, largest, largest + 500);
            return 2;
        }
        if (pinJar) {
            Path jar = Path.of("launcher/target/im.jar");
            if (!Files.isRegularFile(jar)) {
                System.err.println("--pin-jar: no " + jar.toAbsolutePath() + " (build it first; run from the repository root)");
                return 2;
            }
            pinnedDir = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir, "im-conns-jar-");
            pinnedJarDir = pinnedDir;
            Path copy = pinnedDir.resolve("im.jar");
            Files.copy(jar, copy);
            launcher = List.of("java", "-jar", copy.toString());
        } else {
            launcher = List.of(im);
        }
        if (groupsPerDevice < 0 || groupsPerDevice > 10_000 || (groupsPerDevice > 0 && reconnect)) {
            System.err.println("--groups-per-device: 0 to 10000, and not with --reconnect");
            return 2;
        }
        if (chart != null && noEmpty) {
            System.err.println("--chart plots costs above the empty platform: not with --no-empty");
            return 2;
        }
        List<Integer> ordered = new ArrayList<>(sizes);
        Collections.sort(ordered);
        long runStart = System.nanoTime();
        System.out.printf("# connections bench: sizes=%s settle=%d s window=%d s pushes=%d (+%d warm-up) ack-joins=%s"
                        + " groups-per-device=%d platform-env=%s%s%n", ordered, settle, window, messages, warmupMessages, !noAck, groupsPerDevice, platformEnv,
                reconnect ? String.format(Locale.ROOT, " reconnect: pending=%d window=%d s converge-timeout=%d s", pendingMsgs,
                        reconnectWindowS, convergeTimeoutS) : "");
        System.out.printf("# date %s%n", ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        System.out.printf("# machine: nproc=%d, %s %s, harness java %s (%s), harness max heap %d MB, open files %d,"
                        + " platform java: %s%n", Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"),
                System.getProperty("os.version"), System.getProperty("java.version"), System.getProperty("java.vm.name"),
                Runtime.getRuntime().maxMemory() >> 20, fdLimit, platformJava());
        System.out.printf("# platform started as: %s platform%s%n", String.join(" ", launcher),
                pinJar ? " (a copy of launcher/target/im.jar taken at start, " + Files.getLastModifiedTime(pinnedDir.resolve("im.jar"))
                        + "; the same code for every size)" : "");
        System.out.printf("# load avg at start: %s%n", loadAvg());
        Result empty = null;
        if (!noEmpty) empty = runSize(0);
        for (int n : ordered) results.add(runSize(n));
        printTable(empty);
        if (chart != null) writeChart(empty);
        System.out.printf("%n# load avg at end: %s; total %.1f min%n", loadAvg(), (System.nanoTime() - runStart) / 60e9);
        return 0;
    }

    // ------------------------------------------------------------------ one size

    private Result runSize(int n) throws Exception {
        System.out.printf("%n# --- N=%d: fresh platform; load avg %s%n", n, loadAvg());
        unexpectedCloses.set(0);
        wsErrors.set(0);
        decodeErrors.set(0);
        frames.forEach(Map::clear);
        phase.set(0);
        long t0 = System.nanoTime();
        Platform p = Platform.start(launcher, workDir, platformEnv);
        currentPlatform = p;
        HttpClient wsHttp = null;
        ExecutorService wsExec = null;
        try {
            p.awaitReady(Duration.ofSeconds(startTimeout));
            System.out.printf("#   platform pid %d ready in %.1f s (gateway :%d, ops :%d, data %s)%n", p.pid, secs(t0),
                    p.gatewayPort, p.opsPort, p.dir);
            double setupS = Double.NaN;
            double connectS = Double.NaN;
            int errors = 0;
            List<IdleConn> conns = List.of();
            String senderToken = null;
            String[] tokens = new String[n];
            if (n > 0) {
                long s0 = System.nanoTime();
                senderToken = setup(p, n, tokens);
                setupS = secs(s0);
                System.out.printf("#   setup: %d users + %d devices + %d direct conversations (each with %s) + the sender,"
                        + " %d admin requests, %d threads: %.1f s%n", n, n, n, SENDER_USER, 3 * n + 2, setupThreads, setupS);
                if (groupsPerDevice > 0) {
                    long g0 = System.nanoTime();
                    int groups = groups(p, n);
                    System.out.printf("#   groups: %d groups of 10 (one create request each), each device in %d (%d memberships): %.1f s%n",
                            groups, groupsPerDevice, (long) n * groupsPerDevice, secs(g0));
                }
                subNanos.clear();
                wsExec = Executors.newFixedThreadPool(4, daemon("bench-ws-"));
                wsHttp = HttpClient.newBuilder().executor(wsExec).connectTimeout(Duration.ofSeconds(20)).build();
                long c0 = System.nanoTime();
                List<String> errorSamples = new CopyOnWriteArrayList<>();
                conns = connect(p, wsHttp, tokens, errorSamples);
                connectS = secs(c0);
                errors = n - conns.size();
                System.out.printf("#   connect: %d of %d connections authed, subscribed%s in %.1f s (%d threads); errors %d%s%n",
                        conns.size(), n, noAck ? "" : " and acked", connectS, connectThreads, errors,
                        errorSamples.isEmpty() ? "" : ", e.g. " + errorSamples.subList(0, Math.min(3, errorSamples.size())));
                if (conns.isEmpty()) throw new IllegalStateException("no connection could be opened");
                List<Long> subs = new ArrayList<>(subNanos);
                Collections.sort(subs);
                if (!subs.isEmpty()) {
                    System.out.printf(Locale.ROOT, "#   paged sub (%d conversations per device, pages of %d): p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d subs%n",
                            groupsPerDevice + 1, Limits.SUB_DEFAULT_LIMIT, subs.get(subs.size() / 2) / 1e6, subs.get((int) Math.min(subs.size() - 1, Math.ceil(subs.size() * 0.99) - 1)) / 1e6,
                            subs.get(subs.size() - 1) / 1e6, subs.size());
                }
                System.out.printf("#   platform after connect: %d threads, %d open files, im_connections_open %s%n",
                        p.threadCount(), p.openFiles(), p.metric("im_connections_open"));
            }
            phase.set(1);
            sleepChecking(p, settle, "settle");
            Measure m = measure(p);
            long closes = unexpectedCloses.get();
            System.out.printf("#   window: idle CPU %.2f %% of one core = platform JVM %.2f + postgres %.2f (%d processes)%s;"
                            + " harness %.2f%n", m.totalPct, m.jvmPct, m.pgPct, m.pgProcs,
                    m.otherPct > 0 ? String.format(Locale.ROOT, " + other children %.2f", m.otherPct) : "", m.harnessPct);
            System.out.printf("#   JVM by role (%% core):%s%n", m.roles);
            if (topThreads > 0) System.out.printf("#   busiest threads (%% core):%s%n", m.threads);
            System.out.printf("#   postgres by kind (%% core):%s%n", m.pgKinds);
            System.out.printf("#   frames received by the idle connections during settle + window: %s; closed by the server: %d;"
                            + " client errors %d; im_connections_open %s%n", counts(frames.get(1)), closes, wsErrors.get(),
                    p.metric("im_connections_open"));
            Heap h = heap(p);
            System.out.printf("#   memory: heap used after full GC %.1f MB (committed %.0f MB), metaspace %.1f MB; RSS %.1f MB"
                            + " before the GC, %.1f MB after; %d threads%n", h.usedMb, h.committedMb, h.metaspaceMb, m.rssMb,
                    p.rssMb(), p.threadCount());
            double[] lat = {Double.NaN, Double.NaN, Double.NaN};
            int missed = 0;
            if (n > 0) {
                phase.set(2);
                Latency l = latency(p, conns, senderToken, n);
                lat = new double[] {l.p50, l.p99, l.max};
                missed = l.missed;
                System.out.printf("#   pushes: %d measured (after %d warm-up): send -> event on the idle connection p50 %.1f"
                                + " p99 %.1f max %.1f ms; send -> sent p50 %.1f ms; missed (no event in 10 s) %d%n",
                        l.count, warmupMessages, l.p50, l.p99, l.max, l.sentP50, l.missed);
            }
            Storm storm = null;
            if (n > 0 && reconnect) {
                phase.set(3);
                try {
                    storm = reconnect(p, wsHttp, conns, senderToken, tokens, n);
                } catch (Exception e) {
                    System.out.printf("#   reconnect FAILED at N=%d: %s%n", n, e);
                    p.printLogTail(20);
                }
            }
            if (decodeErrors.get() > 0) System.out.printf("#   frames that could not be decoded: %d%n", decodeErrors.get());
            return new Result(n, setupS, connectS, errors, m.totalPct, m.jitPct, m.pgPct, h.usedMb, m.rssMb, lat[0], lat[1],
                    lat[2], missed, storm);
        } catch (Exception | Error e) {
            System.out.printf("#   FAILED at N=%d: %s%n", n, e);
            p.printLogTail(40);
            throw e;
        } finally {
            for (IdleConn c : OPEN) c.close();
            OPEN.clear();
            if (wsExec != null) wsExec.shutdownNow();
            long s0 = System.nanoTime();
            p.close();
            currentPlatform = null;
            System.out.printf("#   platform stopped and its data deleted in %.1f s%n", secs(s0));
        }
    }

    // ------------------------------------------------------------------ setup through the admin API

    /** Creates the sender and N users/devices/conversations; fills {@code tokens}; returns the sender's device token. */
    private String setup(Platform p, int n, String[] tokens) throws Exception {
        Admin admin = new Admin(p.adminPort);
        admin.user(SENDER_USER);
        String senderToken = admin.device(SENDER_USER, SENDER_DEVICE);
        ExecutorService pool = Executors.newFixedThreadPool(setupThreads, daemon("bench-setup-"));
        try {
            List<Future<?>> fs = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int idx = i;
                fs.add(pool.submit(() -> {
                    admin.user("u-" + idx);
                    tokens[idx] = admin.device("u-" + idx, "d-" + idx);
                    admin.conversation("c-" + idx, "u-" + idx, SENDER_USER);
                    return null;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120 + n / 50);
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    throw new IllegalStateException("setup of " + n + " users did not finish within " + (120 + n / 50) + " s");
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new IllegalStateException("setup failed: " + e.getCause(), e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
        return senderToken;
    }

    /**
     * {@code --groups-per-device K}: K rounds of n/10 groups of 10 ({@code g-<round>-<i>}), each
     * device in one group per round; round r groups the users shifted by 3r, so rounds differ.
     * One create request per group, then nothing else (the groups carry no messages).
     */
    private int groups(Platform p, int n) throws Exception {
        Admin admin = new Admin(p.adminPort);
        int perRound = Math.max(1, n / 10);
        ExecutorService pool = Executors.newFixedThreadPool(setupThreads, daemon("bench-groups-"));
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < groupsPerDevice; r++) {
                for (int b = 0; b < perRound; b++) {
                    int round = r;
                    int group = b;
                    fs.add(pool.submit(() -> {
                        ObjectNode body = JSON.createObjectNode().put("conv", "g-" + round + "-" + group).put("kind", "group");
                        ArrayNode members = body.putArray("members");
                        for (int j = 0; j < 10 && group * 10 + j < n; j++) members.add("u-" + ((group * 10 + j + 3 * round) % n));
                        admin.post("/admin/conversations", body, true);
                        return null;
                    }));
                }
            }
            for (Future<?> f : fs) f.get(600, TimeUnit.SECONDS);
            return fs.size();
        } finally {
            pool.shutdownNow();
        }
    }

    // ------------------------------------------------------------------ connections

    private List<IdleConn> connect(Platform p, HttpClient http, String[] tokens, List<String> errorSamples) throws Exception {
        URI uri = URI.create("ws://127.0.0.1:" + p.gatewayPort + "/ws");
        ExecutorService pool = Executors.newFixedThreadPool(connectThreads, daemon("bench-connect-"));
        List<IdleConn> ok = Collections.synchronizedList(new ArrayList<>(tokens.length));
        try {
            List<Future<?>> fs = new ArrayList<>(tokens.length);
            for (int i = 0; i < tokens.length; i++) {
                int idx = i;
                fs.add(pool.submit(() -> {
                    IdleConn c = new IdleConn(idx, "c-" + idx);
                    try {
                        c.open(http, uri);
                        OPEN.add(c);
                        c.authSubAck(tokens[idx]);
                        ok.add(c);
                    } catch (Exception e) {
                        c.close();
                        OPEN.remove(c);
                        if (errorSamples.size() < 5) errorSamples.add("d-" + idx + ": " + e);
                    }
                    return null;
                }));
            }
            // a device in K groups registers K + 1 conversations and acks each head: about K / 10 times the work of one
            long limitS = 60 + (long) tokens.length * (10 + groupsPerDevice) / 1000;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(limitS);
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    throw new IllegalStateException("opening " + tokens.length + " connections took over " + limitS + " s ("
                            + ok.size() + " done)");
                }
            }
        } finally {
            pool.shutdownNow();
        }
        List<IdleConn> sorted = new ArrayList<>(ok);
        sorted.sort((a, b) -> Integer.compare(a.idx, b.idx));
        return sorted;
    }

    /** A silent device connection: JDK WebSocket, frames decoded and counted, requests matched to replies by rid. */
    final class IdleConn implements WebSocket.Listener {
        final int idx;
        final String conv;
        private final StringBuilder buf = new StringBuilder();
        private final AtomicLong rids = new AtomicLong();
        private long firstNanos;
        private volatile WebSocket ws;
        private volatile String expectRid;
        private volatile CompletableFuture<ServerFrame> reply;
        private volatile boolean closing;
        private CompletableFuture<?> chain = CompletableFuture.completedFuture(null);
        /** The highest seq of {@link #conv} this device holds with none missing below it (from sub + ack, then pushes). */
        volatile long cursor;
        /** Ack pushed events (the idle connections); the reconnect storm's connections only ack what they synced. */
        volatile boolean autoAck = true;

        IdleConn(int idx, String conv) {
            this.idx = idx;
            this.conv = conv;
        }

        void open(HttpClient http, URI uri) throws Exception {
            ws = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(20)).buildAsync(uri, this).get(30, TimeUnit.SECONDS);
        }

        void authSubAck(String token) throws Exception {
            ServerFrame f = call(new Auth("a" + rids.incrementAndGet(), token));
            if (!(f instanceof Authed)) throw new IllegalStateException("auth: " + f);
            long sub0 = System.nanoTime();   // the whole paged sub, as the SDKs page it (default page size)
            List<ConvState> convs = new ArrayList<>();
            String after = null;
            do {
                f = call(new Sub("s" + rids.incrementAndGet(), after, Limits.SUB_DEFAULT_LIMIT));
                if (!(f instanceof Subbed s)) throw new IllegalStateException("sub: " + f);
                convs.addAll(s.convs());
                after = s.more() && !s.convs().isEmpty() ? s.convs().get(s.convs().size() - 1).conv() : null;
            } while (after != null);
            subNanos.add(System.nanoTime() - sub0);
            if (convs.size() != 1 + groupsPerDevice || convs.stream().noneMatch(c -> c.conv().equals(conv))) {
                throw new IllegalStateException("subbed lists " + convs.size() + " conversations, expected " + conv + " and "
                        + groupsPerDevice + " groups");
            }
            for (ConvState g : convs) {   // the groups' joins: acked at once, so that no device lags in them
                if (g.conv().equals(conv) || noAck || g.delivered() >= g.head()) continue;
                f = call(new Ack("k" + rids.incrementAndGet(), g.conv(), g.head()));
                if (!(f instanceof Acked)) throw new IllegalStateException("ack " + g.conv() + ": " + f);
            }
            ConvState st = convs.stream().filter(c -> c.conv().equals(conv)).findFirst().orElseThrow();
            cursor = noAck ? st.delivered() : Math.max(st.delivered(), st.head());
            if (noAck || st.delivered() >= st.head()) return;
            f = call(new Ack("k" + rids.incrementAndGet(), conv, st.head()));
            if (!(f instanceof Acked a) || a.delivered() != st.head()) throw new IllegalStateException("ack: " + f);
        }

        private ServerFrame call(ClientFrame frame) throws Exception {
            CompletableFuture<ServerFrame> r = new CompletableFuture<>();
            expectRid = ridOf(frame);
            reply = r;
            send(frame);
            try {
                return r.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new IllegalStateException("no reply to " + frame.getClass().getSimpleName() + " within 30 s");
            }
        }

        /** One request at a time, like {@link #call}, without blocking: the reply or an error frame; fails after {@code timeoutS}. */
        CompletableFuture<ServerFrame> callAsync(ClientFrame frame, int timeoutS) {
            CompletableFuture<ServerFrame> r = new CompletableFuture<>();
            expectRid = ridOf(frame);
            reply = r;
            send(frame);
            return r.orTimeout(timeoutS, TimeUnit.SECONDS);
        }

        String nextRid(String prefix) {
            return prefix + rids.incrementAndGet();
        }

        /** A normal close (1000) after whatever is being sent; the server's close reply is expected, not counted. */
        synchronized void closeNormally() {
            closing = true;
            WebSocket w = ws;
            if (w == null) return;
            chain = chain.handle((v, e) -> null).thenCompose(v -> w.sendClose(WebSocket.NORMAL_CLOSURE, "bench reconnect"));
        }

        synchronized void send(ClientFrame frame) {
            String text = RawWs.CODEC.encode(frame);
            chain = chain.handle((v, e) -> null).thenCompose(v -> ws.sendText(text, true)).whenComplete((v, e) -> {
                if (e != null && !closing) wsErrors.incrementAndGet();
            });
        }

        void close() {
            closing = true;
            WebSocket w = ws;
            if (w != null) w.abort();
        }

        @Override
        public void onOpen(WebSocket webSocket) {
            webSocket.request(1);
        }

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            if (buf.length() == 0) firstNanos = System.nanoTime();
            buf.append(data);
            try {
                if (last) {
                    String text = buf.toString();
                    buf.setLength(0);
                    onFrame(RawWs.CODEC.decodeServer(text), firstNanos);
                }
            } catch (RuntimeException e) {
                if (decodeErrors.incrementAndGet() == 1) System.err.println("# idle client: " + e);
            } finally {
                webSocket.request(1);
            }
            return null;
        }

        private void onFrame(ServerFrame f, long nanos) {
            frames.get(phase.get()).computeIfAbsent(f.getClass().getSimpleName(), k -> new LongAdder()).increment();
            String rid = ridOf(f);
            CompletableFuture<ServerFrame> r = reply;
            if (rid != null && r != null && rid.equals(expectRid)) {
                reply = null;
                r.complete(f);
                return;
            }
            if (f instanceof EventPush e) {
                Event ev = e.ev();
                Pending pd = pending;
                if (pd != null && pd.conv.equals(ev.conv()) && pd.cmid.equals(ev.cmid())) pd.arrival.complete(nanos);
                if (!autoAck) return;
                if (ev.conv().equals(conv) && ev.seq() == cursor + 1) cursor = ev.seq();
                if (!noAck) send(new Ack("k" + rids.incrementAndGet(), ev.conv(), ev.seq()));
            }
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            CompletableFuture<ServerFrame> r = reply;
            if (r != null) r.completeExceptionally(new IOException("closed by the server: " + statusCode + " " + reason));
            if (!closing && unexpectedCloses.incrementAndGet() <= 3) {
                System.err.printf("# connection d-%d closed by the server: %d %s%n", idx, statusCode, reason);
            }
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            CompletableFuture<ServerFrame> r = reply;
            if (r != null) r.completeExceptionally(error);
            if (!closing && wsErrors.incrementAndGet() <= 3) System.err.printf("# connection d-%d: %s%n", idx, error);
        }
    }

    private static String ridOf(Object f) {
        if (f instanceof Auth a) return a.rid();
        if (f instanceof Sub s) return s.rid();
        if (f instanceof Ack a) return a.rid();
        if (f instanceof Sync s) return s.rid();
        if (f instanceof Synced s) return s.rid();
        if (f instanceof Authed a) return a.rid();
        if (f instanceof Subbed s) return s.rid();
        if (f instanceof Acked a) return a.rid();
        if (f instanceof Sent s) return s.rid();
        if (f instanceof ErrorFrame e) return e.rid();
        return null;
    }

    // ------------------------------------------------------------------ push latency

    record Pending(String conv, String cmid, CompletableFuture<Long> arrival) {}

    record Latency(int count, double p50, double p99, double max, double sentP50, int missed) {}

    private Latency latency(Platform p, List<IdleConn> conns, String senderToken, int n) throws Exception {
        Random rnd = new Random(seed + n);
        List<Double> lat = new ArrayList<>();
        List<Double> sent = new ArrayList<>();
        int missed = 0;
        try (BlockingWs s = BlockingWs.open(URI.create("ws://127.0.0.1:" + p.gatewayPort + "/ws"))) {
            s.sendText(RawWs.CODEC.encode(new Auth("a0", senderToken)));
            ServerFrame f = RawWs.CODEC.decodeServer(s.readText());
            if (!(f instanceof Authed)) throw new IllegalStateException("sender auth: " + f);
            for (int m = 0; m < warmupMessages + messages; m++) {
                IdleConn target = conns.get(rnd.nextInt(conns.size()));
                String cmid = "m-" + n + "-" + m;
                String rid = "r" + m;
                Pending pd = new Pending(target.conv, cmid, new CompletableFuture<>());
                pending = pd;
                String text = RawWs.CODEC.encode(new Send(rid, target.conv, cmid, "ping " + m));
                long t0 = System.nanoTime();
                s.sendText(text);
                long tSent;
                while (true) {
                    ServerFrame r = RawWs.CODEC.decodeServer(s.readText());
                    if (r instanceof Sent st && st.rid().equals(rid)) {
                        tSent = System.nanoTime();
                        break;
                    }
                    if (r instanceof ErrorFrame e && rid.equals(e.rid())) throw new IllegalStateException("send: " + e);
                }
                Long arrival;
                try {
                    arrival = pd.arrival.get(10, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    arrival = null;
                }
                if (m >= warmupMessages) {
                    if (arrival == null) missed++;
                    else lat.add((arrival - t0) / 1e6);
                    sent.add((tSent - t0) / 1e6);
                }
                Thread.sleep(20);
            }
        } finally {
            pending = null;
        }
        Collections.sort(lat);
        Collections.sort(sent);
        return new Latency(lat.size(), pct(lat, 50), pct(lat, 99), lat.isEmpty() ? Double.NaN : lat.get(lat.size() - 1),
                pct(sent, 50), missed);
    }

    /** Nearest-rank percentile of a sorted list. */
    private static double pct(List<Double> sorted, double q) {
        if (sorted.isEmpty()) return Double.NaN;
        int rank = (int) Math.ceil(q / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    // ------------------------------------------------------------------ reconnect storm

    /** Sends in flight at once on the sender's socket (under the gateway's IM_MAX_INFLIGHT, default 64). */
    private static final int SEND_CONCURRENCY = 32;
    /** Attempts of a request answered INTERNAL (retriable, but capped as docs/protocol.md says). */
    private static final int MAX_INTERNAL = 5;

    /** The reconnect phase's figures; NaN where not measured. */
    record Storm(int devices, double closeS, int sent, double sendS, int sendErrors, long sendRl, long sendOtherRetries,
                 double convergedS, double p50, double p99, double max, int errors, long rlRetries, long otherRetries,
                 int notConverged, int verifyBad, int pushes) {}

    /** Retries and failures of the storm, shared by its devices. */
    static final class StormCounters {
        final LongAdder rl = new LongAdder();
        final LongAdder other = new LongAdder();
        final Map<String, LongAdder> failures = new ConcurrentHashMap<>();
        final List<String> samples = new CopyOnWriteArrayList<>();
    }

    /** One reconnecting device; its fields are written by its own request chain, one step after the other. */
    static final class Dev {
        final IdleConn c;
        final long from;          // the highest contiguous seq the device held when it went offline
        final int expectMsgs;     // the offline messages that were committed for it
        final String prefix;      // cmid prefix of those messages
        volatile long tConnect;
        volatile long tAck;       // 0 until it acked the head
        volatile String failure;
        volatile String bad;      // verification failure
        long last;                // the highest seq synced so far
        long next;                // the next seq expected (contiguous)
        int msgs;
        int events;
        long subHead;

        Dev(IdleConn c, long from, int expectMsgs, String prefix) {
            this.c = c;
            this.from = from;
            this.expectMsgs = expectMsgs;
            this.prefix = prefix;
            this.last = from;
            this.next = from + 1;
        }
    }

    private Storm reconnect(Platform p, HttpClient http, List<IdleConn> conns, String senderToken, String[] tokens, int n)
            throws Exception {
        int size = conns.size();
        // 1. every idle connection closes normally; wait for the gateway to count none
        long c0 = System.nanoTime();
        for (IdleConn c : conns) c.closeNormally();
        long limitS = 60 + size / 500;
        long deadline = c0 + TimeUnit.SECONDS.toNanos(limitS);
        String open = p.metric("im_connections_open");
        while (!"0".equals(open)) {
            if (!p.alive()) throw new IllegalStateException("the platform exited while the connections closed");
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("im_connections_open is " + open + ", not 0, " + limitS + " s after closing "
                        + size + " connections normally");
            }
            Thread.sleep(100);
            open = p.metric("im_connections_open");
        }
        double closeS = secs(c0);
        Set<IdleConn> old = Collections.newSetFromMap(new IdentityHashMap<>());
        old.addAll(conns);
        for (IdleConn c : conns) c.close();   // whatever is left of the client side
        OPEN.removeIf(old::contains);
        long closedByServer = unexpectedCloses.get();

        // 2. while they are offline: --pending messages into each conversation from the sender
        AtomicIntegerArray sentOk = new AtomicIntegerArray(n);
        long s0 = System.nanoTime();
        long[] send = sendPending(p, senderToken, conns, n, sentOk);
        double sendS = secs(s0);
        int sent = (int) send[0];
        System.out.printf("#   reconnect: %d connections closed normally, im_connections_open 0 after %.1f s; %d x %d messages sent"
                        + " to the offline devices in %.1f s (%d in flight): %d committed, send errors %d, RATE_LIMITED retries %d,"
                        + " other retries %d%n", size, closeS, size, pendingMsgs, sendS, SEND_CONCURRENCY, sent, send[1], send[2], send[3]);

        // 3. the storm: N devices connect over --reconnect-window-s, auth, sub, sync, ack the head
        List<Dev> devs = new ArrayList<>(size);
        for (IdleConn o : conns) {
            IdleConn c = new IdleConn(o.idx, o.conv);
            c.autoAck = false;
            devs.add(new Dev(c, o.cursor, sentOk.get(o.idx), "rc-" + n + "-" + o.idx + "-"));
        }
        URI uri = URI.create("ws://127.0.0.1:" + p.gatewayPort + "/ws");
        StormCounters ctr = new StormCounters();
        ScheduledExecutorService starter = Executors.newSingleThreadScheduledExecutor(daemon("bench-storm-"));
        int verifyBad = 0;
        int errors = 0;
        int notConverged = 0;
        List<Double> lat = new ArrayList<>(size);
        long lastAck = 0;
        long pushes;
        long t0 = System.nanoTime();
        try {
            long windowNanos = TimeUnit.SECONDS.toNanos(reconnectWindowS);
            long convergeDeadline = t0 + TimeUnit.SECONDS.toNanos(convergeTimeoutS);
            List<CompletableFuture<Void>> fs = new ArrayList<>(size);
            for (int i = 0; i < size; i++) {
                Dev d = devs.get(i);
                CompletableFuture<Void> done = new CompletableFuture<>();
                fs.add(done);
                long at = size == 1 ? 0 : windowNanos * i / size;
                starter.schedule(() -> {
                    try {
                        runDevice(d, http, uri, tokens[d.c.idx], convergeDeadline, ctr).whenComplete((v, e) -> {
                            if (e != null) fail(d, e, ctr);
                            done.complete(null);
                        });
                    } catch (RuntimeException e) {
                        fail(d, e, ctr);
                        done.complete(null);
                    }
                }, at, TimeUnit.NANOSECONDS);
            }
            try {
                CompletableFuture.allOf(fs.toArray(new CompletableFuture<?>[0]))
                        .get(Math.max(1, convergeDeadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // counted below as not converged
            }
            // 4. the figures, read before anything is closed
            for (Dev d : devs) {
                long ack = d.tAck;
                if (ack == 0 || ack > convergeDeadline) {
                    notConverged++;
                    if (d.failure != null) errors++;
                    continue;
                }
                lat.add((ack - d.tConnect) / 1e6);
                lastAck = Math.max(lastAck, ack);
                String bad = d.bad;
                if (bad == null && d.msgs != d.expectMsgs) bad = d.msgs + " offline messages synced, " + d.expectMsgs + " sent";
                if (bad == null && d.events != d.msgs) bad = d.events + " events synced, " + d.msgs + " of them the offline messages";
                if (bad == null && d.next - 1 != d.subHead) bad = "holds up to " + (d.next - 1) + ", head " + d.subHead;
                if (bad == null && d.from + d.expectMsgs != d.subHead) {
                    bad = "held " + d.from + " + " + d.expectMsgs + " sent != head " + d.subHead;
                }
                if (bad != null) {
                    verifyBad++;
                    if (verifyBad <= 3) System.out.printf("#   reconnect verify d-%d: %s%n", d.c.idx, bad);
                }
            }
            pushes = frames.get(3).getOrDefault("EventPush", new LongAdder()).sum();
        } finally {
            starter.shutdownNow();
            for (Dev d : devs) d.c.close();
        }
        Collections.sort(lat);
        double convergedS = notConverged == 0 && lastAck > 0 ? (lastAck - t0) / 1e9 : Double.NaN;
        Storm st = new Storm(size, closeS, sent, sendS, (int) send[1], send[2], send[3], convergedS, pct(lat, 50), pct(lat, 99),
                lat.isEmpty() ? Double.NaN : lat.get(lat.size() - 1), errors, ctr.rl.sum(), ctr.other.sum(), notConverged,
                verifyBad, (int) pushes);
        System.out.printf(Locale.ROOT, "#   reconnect storm N=%d over %d s: converged in %s s; connect -> ack of the head p50 %s p99 %s"
                        + " max %s ms; errors %d; RATE_LIMITED retries %d; other retries %d; not converged within %d s: %d;"
                        + " verified %d of %d (bad %d); pushes %d%n", size, reconnectWindowS, f1(convergedS), f1(st.p50()),
                f1(st.p99()), f1(st.max()), errors, st.rlRetries(), st.otherRetries(), convergeTimeoutS, notConverged,
                lat.size() - verifyBad, size, verifyBad, pushes);
        System.out.printf("#   reconnect: frames received %s; closed by the server during the phase %d; failures by kind %s%s%n",
                counts(frames.get(3)), unexpectedCloses.get() - closedByServer, counts(ctr.failures),
                ctr.samples.isEmpty() ? "" : ", e.g. " + ctr.samples);
        return st;
    }

    private static void fail(Dev d, Throwable e, StormCounters ctr) {
        Throwable t = e;
        while ((t instanceof java.util.concurrent.CompletionException || t instanceof java.util.concurrent.ExecutionException)
                && t.getCause() != null) t = t.getCause();
        if (d.failure != null) return;
        d.failure = String.valueOf(t);
        String kind = t instanceof StormFailure sf ? sf.kind : t.getClass().getSimpleName();
        ctr.failures.computeIfAbsent(kind, k -> new LongAdder()).increment();
        if (ctr.samples.size() < 3) ctr.samples.add("d-" + d.c.idx + ": " + t);
    }

    /** A device's request failed: {@code kind} is the error code, or what else went wrong. */
    static final class StormFailure extends RuntimeException {
        final String kind;

        StormFailure(String kind, String msg) {
            super(msg, null, false, false);
            this.kind = kind;
        }
    }

    private static StormFailure unexpected(String what, ServerFrame f) {
        return new StormFailure(f instanceof ErrorFrame e ? e.code().wire() : "unexpected reply", what + ": " + f);
    }

    /** connect, auth, sub, sync every page from the held seq, ack the head; completes when the ack is answered. */
    private CompletableFuture<Void> runDevice(Dev d, HttpClient http, URI uri, String token, long deadline, StormCounters ctr) {
        IdleConn c = d.c;
        d.tConnect = System.nanoTime();
        return http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(20)).buildAsync(uri, c)
                .orTimeout(30, TimeUnit.SECONDS)
                .thenCompose(ws -> {
                    c.ws = ws;
                    return retrying(c, new Auth(c.nextRid("a"), token), deadline, ctr, 1);
                })
                .thenCompose(f -> {
                    if (!(f instanceof Authed)) throw unexpected("auth", f);
                    return retrying(c, new Sub(c.nextRid("s")), deadline, ctr, 1);
                })
                .thenCompose(f -> {
                    if (!(f instanceof Subbed s)) throw unexpected("sub", f);
                    ConvState st = null;
                    for (ConvState cs : s.convs()) if (cs.conv().equals(c.conv)) st = cs;
                    if (st == null || s.convs().size() != 1) throw unexpected("sub (expected only " + c.conv + ")", f);
                    d.subHead = st.head();
                    if (st.head() <= st.delivered()) return CompletableFuture.completedFuture(null);
                    long head = st.head();
                    long delivered = st.delivered();
                    return syncPages(d, deadline, ctr).thenCompose(v -> {
                        long held = d.next - 1;
                        if (held < head && d.bad == null) d.bad = "synced up to " + held + " of head " + head;
                        if (held <= delivered) return CompletableFuture.completedFuture(null);
                        return retrying(c, new Ack(c.nextRid("k"), c.conv, held), deadline, ctr, 1).thenAccept(a -> {
                            if (!(a instanceof Acked k) || k.delivered() < held) throw unexpected("ack " + held, a);
                        });
                    });
                })
                .thenAccept(v -> d.tAck = System.nanoTime());
    }

    private CompletableFuture<Void> syncPages(Dev d, long deadline, StormCounters ctr) {
        IdleConn c = d.c;
        return retrying(c, new Sync(c.nextRid("y"), c.conv, d.last, 100), deadline, ctr, 1).thenCompose(f -> {
            if (!(f instanceof Synced s)) throw unexpected("sync after " + d.last, f);
            for (Event ev : s.events()) {
                d.events++;
                if (ev.seq() == d.next) d.next++;
                else if (d.bad == null) d.bad = "synced seq " + ev.seq() + " where " + d.next + " was expected";
                d.last = Math.max(d.last, ev.seq());
                if (Event.MSG.equals(ev.kind()) && ev.cmid() != null && ev.cmid().startsWith(d.prefix)) d.msgs++;
            }
            if (!s.more()) return CompletableFuture.completedFuture(null);
            if (s.events().isEmpty()) throw unexpected("sync after " + d.last + " (more without events)", f);
            return syncPages(d, deadline, ctr);
        });
    }

    /** The request's reply; a retriable error is retried (the same frame) after 100-500 ms until the deadline. */
    private CompletableFuture<ServerFrame> retrying(IdleConn c, ClientFrame req, long deadline, StormCounters ctr, int attempt) {
        return c.callAsync(req, 30).thenCompose(f -> {
            if (f instanceof ErrorFrame e && e.code().retriable() && System.nanoTime() < deadline
                    && (e.code() != ErrorCode.INTERNAL || attempt < MAX_INTERNAL)) {
                (e.code() == ErrorCode.RATE_LIMITED ? ctr.rl : ctr.other).increment();
                long ms = 100 + ThreadLocalRandom.current().nextInt(401);
                return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(ms, TimeUnit.MILLISECONDS))
                        .thenCompose(v -> retrying(c, req, deadline, ctr, attempt + 1));
            }
            return CompletableFuture.completedFuture(f);
        });
    }

    /**
     * {@code --pending} messages into each connection's conversation from the sender's socket, at most
     * {@link #SEND_CONCURRENCY} in flight; retriable refusals are resent (same rid and cmid) after 100-500 ms.
     * Counts the committed ones per device in {@code sentOk}; returns {committed, errors, RATE_LIMITED retries, other retries}.
     */
    private long[] sendPending(Platform p, String senderToken, List<IdleConn> conns, int n, AtomicIntegerArray sentOk)
            throws Exception {
        int total = conns.size() * pendingMsgs;
        Semaphore permits = new Semaphore(SEND_CONCURRENCY);
        Map<String, Send> inflight = new ConcurrentHashMap<>();
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(total);
        AtomicLong ok = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        AtomicLong rl = new AtomicLong();
        AtomicLong other = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> fatal = new AtomicReference<>();
        List<String> samples = new CopyOnWriteArrayList<>();
        ScheduledExecutorService resend = Executors.newSingleThreadScheduledExecutor(daemon("bench-resend-"));
        Thread reader = null;
        try (BlockingWs s = BlockingWs.open(URI.create("ws://127.0.0.1:" + p.gatewayPort + "/ws"))) {
            s.sendText(RawWs.CODEC.encode(new Auth("a0", senderToken)));
            ServerFrame af = RawWs.CODEC.decodeServer(s.readText());
            if (!(af instanceof Authed)) throw new IllegalStateException("sender auth: " + af);
            Runnable abort = () -> {
                while (done.getCount() > 0) done.countDown();
                permits.release(SEND_CONCURRENCY + 1);
            };
            java.util.function.Consumer<Send> write = q -> {
                try {
                    synchronized (s) {
                        s.sendText(RawWs.CODEC.encode(q));
                    }
                } catch (IOException e) {
                    if (fatal.compareAndSet(null, e)) abort.run();
                }
            };
            reader = new Thread(null, () -> {
                while (!stop.get()) {
                    ServerFrame r;
                    try {
                        r = RawWs.CODEC.decodeServer(s.readText());
                    } catch (SocketTimeoutException e) {
                        continue;
                    } catch (IOException | RuntimeException e) {
                        if (!stop.get() && fatal.compareAndSet(null, e)) abort.run();
                        return;
                    }
                    if (r instanceof Sent st) {
                        Send q = inflight.remove(st.rid());
                        if (q == null) continue;
                        attempts.remove(st.rid());
                        sentOk.incrementAndGet(Integer.parseInt(q.rid().substring(1, q.rid().indexOf('-'))));
                        ok.incrementAndGet();
                        permits.release();
                        done.countDown();
                    } else if (r instanceof ErrorFrame e && e.rid() != null && inflight.containsKey(e.rid())) {
                        Send q = inflight.get(e.rid());
                        int a = attempts.merge(e.rid(), 1, Integer::sum);
                        if (e.code().retriable() && (e.code() != ErrorCode.INTERNAL || a < MAX_INTERNAL)) {
                            (e.code() == ErrorCode.RATE_LIMITED ? rl : other).incrementAndGet();
                            resend.schedule(() -> write.accept(q), 100 + ThreadLocalRandom.current().nextInt(401), TimeUnit.MILLISECONDS);
                        } else {
                            inflight.remove(e.rid());
                            errors.incrementAndGet();
                            if (samples.size() < 3) samples.add(q.conv() + ": " + e);
                            permits.release();
                            done.countDown();
                        }
                    }
                }
            }, "bench-sender-reader", 256 * 1024);
            reader.setDaemon(true);
            reader.start();
            long limitS = 120 + total / 100;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(limitS);
            for (IdleConn c : conns) {
                for (int k = 0; k < pendingMsgs; k++) {
                    if (!permits.tryAcquire(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        throw new IllegalStateException("sending " + total + " messages took over " + limitS + " s (" + ok.get() + " sent)");
                    }
                    if (fatal.get() != null) throw new IllegalStateException("sender connection failed: " + fatal.get(), fatal.get());
                    Send q = new Send("p" + c.idx + "-" + k, c.conv, "rc-" + n + "-" + c.idx + "-" + k, "offline " + k);
                    inflight.put(q.rid(), q);
                    write.accept(q);
                }
            }
            if (!done.await(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException("sending " + total + " messages took over " + limitS + " s (" + ok.get() + " sent)");
            }
            if (fatal.get() != null) throw new IllegalStateException("sender connection failed: " + fatal.get(), fatal.get());
            if (!samples.isEmpty()) System.out.printf("#   reconnect: send errors, e.g. %s%n", samples);
            stop.set(true);
        } finally {
            stop.set(true);
            resend.shutdownNow();
            if (reader != null) reader.join(5000);
        }
        return new long[] {ok.get(), errors.get(), rl.get(), other.get()};
    }

    // ------------------------------------------------------------------ CPU, memory

    record Measure(double totalPct, double jvmPct, double pgPct, int pgProcs, double otherPct, double harnessPct,
                   double rssMb, double jitPct, String roles, String threads, String pgKinds) {}

    private Measure measure(Platform p) throws Exception {
        Map<Long, Long> procsA = p.processTicks();
        Map<Long, Long> tasksA = tasks(p.pid);
        long harnessA = Procs.ticks(Path.of("/proc/self/stat"));
        long w0 = System.nanoTime();
        sleepChecking(p, window, "window");
        // every reading first, then jcmd (its attach listener would count otherwise)
        Map<Long, Long> procsB = p.processTicks();
        Map<Long, Long> tasksB = tasks(p.pid);
        long harnessB = Procs.ticks(Path.of("/proc/self/stat"));
        double wallS = (System.nanoTime() - w0) / 1e9;
        double rss = p.rssMb();
        Map<Long, String> pgKind = p.postgresKinds();
        double jvm = 0;
        double pg = 0;
        double other = 0;
        Map<String, Double> byKind = new TreeMap<>();
        for (Map.Entry<Long, Long> e : procsB.entrySet()) {
            double pctCore = pctCore(e.getValue() - procsA.getOrDefault(e.getKey(), 0L), wallS);
            if (e.getKey() == p.pid) {
                jvm += pctCore;
            } else if (pgKind.containsKey(e.getKey())) {
                pg += pctCore;
                byKind.merge(pgKind.get(e.getKey()), pctCore, Double::sum);
            } else {
                other += pctCore;
            }
        }
        Map<Long, String> names = threadNames(p.pid);
        Map<String, Double> roles = new TreeMap<>();
        List<Map.Entry<String, Double>> threads = new ArrayList<>();
        for (Map.Entry<Long, Long> e : tasksB.entrySet()) {
            double pctCore = pctCore(e.getValue() - tasksA.getOrDefault(e.getKey(), 0L), wallS);
            String name = names.getOrDefault(e.getKey(), comm(p.pid, e.getKey()));
            roles.merge(role(name), pctCore, Double::sum);
            if (pctCore > 0) threads.add(Map.entry(name, pctCore));
        }
        threads.sort(Map.Entry.<String, Double>comparingByValue().reversed());
        return new Measure(jvm + pg + other, jvm, pg, pgKind.size(), other, pctCore(harnessB - harnessA, wallS), rss,
                roles.getOrDefault("jvm jit", 0.0), fmt(roles, 20), fmt(threads, topThreads), fmt(byKind, 8));
    }

    private double pctCore(long ticks, double wallS) {
        return 100.0 * Math.max(0, ticks) / clockTick / wallS;
    }

    private static String fmt(Map<String, Double> m, int k) {
        List<Map.Entry<String, Double>> l = new ArrayList<>(m.entrySet());
        l.sort(Map.Entry.<String, Double>comparingByValue().reversed());
        return fmt(l, k);
    }

    private static String fmt(List<Map.Entry<String, Double>> l, int k) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Double> e : l.subList(0, Math.min(k, l.size()))) {
            if (e.getValue() < 0.005) continue;
            b.append(String.format(Locale.ROOT, " %s=%.2f", e.getKey().replace(' ', '_'), e.getValue()));
        }
        return b.length() == 0 ? " (none)" : b.toString();
    }

    /** The role a platform thread belongs to: the JVM's own threads first, then the bench's usual mapping. */
    private static String role(String thread) {
        if (thread.startsWith("C1 Compiler") || thread.startsWith("C2 Compiler")) return "jvm jit";
        if (thread.startsWith("GC Thread") || thread.startsWith("G1 ") || thread.equals("VM Thread")
                || thread.startsWith("VM Periodic")) return "jvm gc+vm";
        String r = RoleCpu.roleOf(thread);
        return r.equals("bench clients") ? "other" : r;   // in the platform JVM these are its own HTTP clients
    }

    record Heap(double usedMb, double committedMb, double metaspaceMb) {}

    private static Heap heap(Platform p) throws Exception {
        // two full collections (System.gc() under G1 is a full GC), then the heap as the JVM reports it
        run(30, "jcmd", String.valueOf(p.pid), "GC.run");
        run(30, "jcmd", String.valueOf(p.pid), "GC.run");
        String info = run(30, "jcmd", String.valueOf(p.pid), "GC.heap_info");
        Matcher m = HEAP.matcher(info);
        if (!m.find()) throw new IllegalStateException("cannot read GC.heap_info: " + info);
        Matcher ms = METASPACE.matcher(info);
        double meta = ms.find() ? Long.parseLong(ms.group(1)) / 1024.0 : Double.NaN;
        return new Heap(Long.parseLong(m.group(2)) / 1024.0, Long.parseLong(m.group(1)) / 1024.0, meta);
    }

    /** Thread id → full name, from {@code jcmd Thread.print} (the kernel's comm keeps only 15 characters). */
    private static Map<Long, String> threadNames(long pid) {
        Map<Long, String> names = new HashMap<>();
        try {
            for (String line : run(60, "jcmd", String.valueOf(pid), "Thread.print").split("\n")) {
                Matcher m = THREAD_LINE.matcher(line);
                if (!m.find()) continue;
                String nid = m.group(2);
                names.put(nid.startsWith("0x") ? Long.parseLong(nid.substring(2), 16) : Long.parseLong(nid), m.group(1));
            }
        } catch (Exception e) {
            System.err.println("# jcmd Thread.print failed (thread names from /proc): " + e);
        }
        return names;
    }

    private static String comm(long pid, long tid) {
        try {
            return Files.readString(Path.of("/proc/" + pid + "/task/" + tid + "/comm")).trim();
        } catch (IOException e) {
            return "tid " + tid;
        }
    }

    private static Map<Long, Long> tasks(long pid) {
        Map<Long, Long> m = new HashMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
            for (Path t : ds) {
                long v = Procs.ticks(t.resolve("stat"));
                if (v >= 0) m.put(Long.parseLong(t.getFileName().toString()), v);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read /proc/" + pid + "/task (did the platform exit?)", e);
        }
        return m;
    }

    private static String platformJava() {
        try {
            String v = run(20, "java", "-version");
            return v.lines().filter(l -> l.contains("Runtime Environment")).findFirst().orElse(v.lines().findFirst().orElse("?")).trim();
        } catch (Exception e) {
            return "?";
        }
    }

    /** Runs a command, returns stdout+stderr; fails on a non-zero exit or after {@code timeoutS}. */
    static String run(int timeoutS, String... cmd) throws Exception {
        Process pr = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = pr.getInputStream()) {
                return in.readAllBytes();
            } catch (IOException e) {
                return new byte[0];
            }
        });
        if (!pr.waitFor(timeoutS, TimeUnit.SECONDS)) {
            pr.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + ": no exit within " + timeoutS + " s");
        }
        String text = new String(out.get(10, TimeUnit.SECONDS), StandardCharsets.UTF_8);
        if (pr.exitValue() != 0) throw new IllegalStateException(String.join(" ", cmd) + " exited " + pr.exitValue() + ": " + text);
        return text;
    }

    private void sleepChecking(Platform p, int seconds, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) return;
            if (!p.alive()) throw new IllegalStateException("the platform exited during the " + what);
            TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.SECONDS.toNanos(1)));
        }
    }

    private static String counts(Map<String, LongAdder> m) {
        if (m.isEmpty()) return "none";
        Map<String, Long> sorted = new TreeMap<>();
        m.forEach((k, v) -> sorted.put(k, v.sum()));
        return sorted.toString();
    }


    private static double secs(long since) {
        return (System.nanoTime() - since) / 1e9;
    }

    // ------------------------------------------------------------------ the table

    private void printTable(Result empty) {
        System.out.printf("%n# idle subscribed connections, each size on a fresh ./im platform; window %d s after %d s settle."
                + " CPU in %% of one core (platform JVM incl. its Kafka broker + embedded PostgreSQL); heap = used after a"
                + " full GC; RSS = the platform JVM (mostly G1's committed heap, which it sizes by its own rules); KB/conn = above the empty platform, divided by N; push = send ->"
                + " event on an idle connection%n", window, settle);
        System.out.println("# cpu_% = all of it; nojit_% = without the platform JVM's JIT compiler threads (still compiling"
                + " after the settle, the largest noise); above_0 and %/1kconn are of nojit_%");
        String head = String.format(Locale.ROOT, "%6s %7s %9s %6s %7s %8s %8s %8s %8s %8s %8s %8s %7s %7s %7s",
                "N", "setup_s", "connect_s", "errors", "cpu_%", "nojit_%", "above_0", "%/1kconn", "heap_MB", "KB/conn", "RSS_MB",
                "KB/conn", "p50_ms", "p99_ms", "max_ms");
        System.out.println(head);
        List<Result> all = new ArrayList<>();
        if (empty != null) all.add(empty);
        all.addAll(results);
        for (Result r : all) {
            boolean base = r.n == 0 || empty == null;
            double cpuAbove = base ? Double.NaN : r.cpuNoJit() - empty.cpuNoJit();
            double heapKb = base ? Double.NaN : r.heapKbPerConn(empty);
            double rssKb = base ? Double.NaN : (r.rssMb - empty.rssMb) * 1024 / r.n;
            System.out.printf(Locale.ROOT, "%6d %7s %9s %6s %7.2f %8.2f %8s %8s %8.1f %8s %8.1f %8s %7s %7s %7s%n",
                    r.n, f1(r.setupS), f1(r.connectS), r.n == 0 ? "-" : String.valueOf(r.errors), r.cpuPct, r.cpuNoJit(), f2(cpuAbove),
                    f2(base ? Double.NaN : r.cpuPer1k(empty)), r.heapMb, f1(heapKb), r.rssMb, f1(rssKb), f1(r.p50), f1(r.p99), f1(r.max));
        }
        if (results.stream().anyMatch(r -> r.missed > 0)) {
            System.out.println("# pushes missed (no event within 10 s): "
                    + results.stream().map(r -> r.n + ":" + r.missed).toList());
        }
        if (results.stream().anyMatch(r -> r.storm != null)) {
            System.out.printf("%n# reconnect storm (--reconnect): all N closed normally (close_s: until im_connections_open = 0), %d"
                    + " messages sent to each offline device (send_s, send_err, send_rl = RATE_LIMITED resends), then N reconnects"
                    + " spread over %d s: auth, sub, sync, ack the head. conv_s = storm start -> last ack (- if any device did not"
                    + " converge); p50/p99/max = one device's connect -> ack of its head; errors = failed devices (not retried);"
                    + " rl_retry = RATE_LIMITED retries, oth_retry = other retriable retries; no_conv = not acked within %d s;"
                    + " bad = verification failures (synced seqs not contiguous up to the head, or not exactly the sent messages)%n",
                    pendingMsgs, reconnectWindowS, convergeTimeoutS);
            System.out.printf("%6s %7s %7s %8s %7s %7s %8s %8s %8s %6s %8s %9s %7s %5s%n", "N", "close_s", "send_s", "send_err",
                    "send_rl", "conv_s", "p50_ms", "p99_ms", "max_ms", "errors", "rl_retry", "oth_retry", "no_conv", "bad");
            for (Result r : results) {
                Storm st = r.storm;
                if (st == null) {
                    System.out.printf("%6d %s%n", r.n, reconnect ? "(reconnect phase failed)" : "-");
                    continue;
                }
                System.out.printf(Locale.ROOT, "%6d %7s %7s %8d %7d %7s %8s %8s %8s %6d %8d %9d %7d %5d%n", r.n, f1(st.closeS()),
                        f1(st.sendS()), st.sendErrors(), st.sendRl(), f2(st.convergedS()), f1(st.p50()), f1(st.p99()),
                        f1(st.max()), st.errors(), st.rlRetries(), st.otherRetries(), st.notConverged(), st.verifyBad());
            }
        }
        if (results.size() < 2) return;
        Result s = results.get(0);
        System.out.printf("%n# growth vs N=%d (x = ratio; linear in N would be the N ratio; 'above 0' = minus the empty platform)%n", s.n);
        System.out.println("# cpu>0_x is of nojit_% above the empty platform; d_* = marginal cost from the previous size:"
                + " heap KB and nojit CPU per 1000 connections");
        System.out.printf("%6s %7s %8s %9s %8s %8s %10s %10s %8s %8s %12s %12s%n", "N", "N_x", "setup_x", "connect_x", "cpu_x",
                "cpu>0_x", "heap>0_x", "rss>0_x", "p50_x", "p99_x", "d_heap_KB/c", "d_cpu_%/1k");
        Result prev = null;
        for (Result r : results) {
            double e0cpu = empty == null ? 0 : empty.cpuNoJit();
            double e0heap = empty == null ? 0 : empty.heapMb;
            double e0rss = empty == null ? 0 : empty.rssMb;
            double dHeap = prev == null ? Double.NaN : (r.heapMb - prev.heapMb) * 1024 / (r.n - prev.n);
            double dCpu = prev == null ? Double.NaN : (r.cpuNoJit() - prev.cpuNoJit()) * 1000 / (r.n - prev.n);
            System.out.printf(Locale.ROOT, "%6d %7.1f %8s %9s %8s %8s %10s %10s %8s %8s %12s %12s%n", r.n, (double) r.n / s.n,
                    f2(r.setupS / s.setupS), f2(r.connectS / s.connectS), f2(r.cpuPct / s.cpuPct),
                    f2((r.cpuNoJit() - e0cpu) / (s.cpuNoJit() - e0cpu)), f2((r.heapMb - e0heap) / (s.heapMb - e0heap)),
                    f2((r.rssMb - e0rss) / (s.rssMb - e0rss)), f2(r.p50 / s.p50), f2(r.p99 / s.p99), f1(dHeap), f2(dCpu));
            prev = r;
        }
    }

    /** Cost per connection against N, three charts side by side since their units differ: CPU, heap, push latency. */
    private void writeChart(Result empty) throws IOException {
        String xTitle = "idle connections N";
        double[] n = results.stream().mapToDouble(Result::n).toArray();
        XYChart cpu = Charts.against("Idle CPU above the empty platform", xTitle, "% of one core per 1,000 connections", 480, 420);
        Charts.addSeries(cpu, "platform without JIT threads", n, results.stream().mapToDouble(r -> r.cpuPer1k(empty)).toArray());
        XYChart heap = Charts.against("Heap above the empty platform", xTitle, "KB per connection", 480, 420);
        Charts.addSeries(heap, "used after a full GC", n, results.stream().mapToDouble(r -> r.heapKbPerConn(empty)).toArray());
        XYChart push = Charts.against("Push to an idle connection", xTitle, "send -> event (ms)", 480, 420);
        Charts.addSeries(push, "p50", n, results.stream().mapToDouble(Result::p50).toArray());
        Charts.addSeries(push, "p99", n, results.stream().mapToDouble(Result::p99).toArray());
        for (XYChart c : List.of(cpu, heap, push)) {
            c.getStyler().setXAxisDecimalPattern("#,##0");
            c.getStyler().setYAxisDecimalPattern("#,##0.##");
        }
        Charts.write(chart, chartTitle, cpu, heap, push);
    }

    private static String f1(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String f2(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
    }
}
