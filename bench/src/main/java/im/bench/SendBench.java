package im.bench;

import static im.bench.BenchEnv.deleteTree;
import static im.bench.BenchEnv.load1;
import static im.bench.BenchEnv.loadAvg;
import static im.bench.BenchEnv.printServer;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.client.api.SentAck;
import im.embedded.EmbeddedPg;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.fault.Faults;
import im.store.send.SendSql;
import im.store.directory.Directory;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.FrameCodec;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Send path benchmark: {@code sent} latency through the gateway (SDK, raw and lean WebSocket) beside
 * the floor, which is the very SQL of one send ({@link SendSql}) run by pgbench against the same
 * PostgreSQL, database and conversations, in the same run.
 *
 * <p>Fixtures: sender {@code i} is user {@code 100000+i} with gateway device {@code g<i>} and
 * pgbench device {@code 200000+i}; conversation {@code j} is {@code 300000+j}. Senders are split
 * into {@code G = min(C, N/2)} groups ({@code i % G}); conversation {@code j} belongs to group
 * {@code j % G} and its members are that group's senders. Each send (gateway or pgbench) goes to
 * a random conversation of the sender's group, so both sides see the same contention. Ids are
 * digits only so that pgbench integer variables can carry them as parameters.
 */
@Command(name = "send-bench", mixinStandardHelpOptions = true,
        description = "sent latency via the gateway vs the same SQL through pgbench, in one run")
public final class SendBench implements java.util.concurrent.Callable<Integer> {

    @Option(names = "--senders", description = "concurrent senders (and pgbench clients), default ${DEFAULT-VALUE}")
    int senders = 16;
    @Option(names = "--send-lanes", description = "the gateway's IM_SEND_LANES (group commit; 0 = one transaction per send), default ${DEFAULT-VALUE}")
    int sendLanes = im.store.send.SendService.DEFAULT_LANES;
    @Option(names = "--conversations", description = "conversations, default ${DEFAULT-VALUE}; 1 = one hot conversation")
    int conversations = 1000;
    @Option(names = "--seconds", description = "measured seconds per mode, default ${DEFAULT-VALUE}")
    int seconds = 20;
    @Option(names = "--warmup", description = "warm-up seconds before each measurement, default ${DEFAULT-VALUE}")
    int warmup = 5;
    @Option(names = "--body-bytes", description = "message body size, default ${DEFAULT-VALUE}")
    int bodyBytes = 200;
    @Option(names = "--modes", split = ",", description = "any of sdk,raw,lean,pgbench (lean: blocking WebSocket"
            + " clients without the JDK HttpClient's threads, the cheapest load generator); default ${DEFAULT-VALUE}")
    List<String> modes = List.of("sdk", "raw", "pgbench");
    @Option(names = "--raw", description = "only the raw WebSocket mode (same as --modes raw,pgbench)")
    boolean rawOnly;
    @Option(names = "--pgbench", description = "pgbench binary, default ${DEFAULT-VALUE}")
    String pgbench = "/usr/bin/pgbench";
    @Option(names = "--work-dir", description = "parent of the temp dir (database, client state, pgbench logs); default java.io.tmpdir")
    Path workDir;
    @Option(names = "--keep", description = "keep the temp dir")
    boolean keep;

    private final List<Row> rows = new ArrayList<>();
    private final FrameCodec codec = new FrameCodec();

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "bench-logback.xml");
        }
        System.exit(new CommandLine(new SendBench()).execute(args));
    }

    record Row(String mode, int clients, int convs, long count, double seconds, Histogram h, double cpuBusy,
               double jvmCpu, String load, String note) {
        double rate() {
            return count / seconds;
        }

        double ms(double pct) {
            return h.getValueAtPercentile(pct) / 1000.0;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (rawOnly) modes = List.of("raw", "pgbench");
        if (senders < 1 || conversations < 1 || seconds < 1 || warmup < 0 || bodyBytes < 1) {
            System.err.println("senders, conversations, seconds, body-bytes must be >= 1");
            return 2;
        }
        List<String> unknown = modes.stream().filter(m -> !List.of("sdk", "raw", "lean", "pgbench").contains(m)).toList();
        if (!unknown.isEmpty()) {
            System.err.println("unknown --modes " + unknown + ": use any of sdk,raw,lean,pgbench");
            return 2;
        }
        boolean wantPgbench = modes.contains("pgbench");
        if (wantPgbench && !PgbenchFloor.available(pgbench)) {
            System.err.println(PgbenchFloor.missing(pgbench) + ", or run without it: --modes sdk,raw");
            return 2;
        }
        Path tmp = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir,
                "send-bench-");
        System.out.printf("# send bench: IM_SEND_LANES=%d%n", sendLanes);
        System.out.printf("# send bench: senders=%d conversations=%d warmup=%ds measured=%ds body=%dB modes=%s%n",
                senders, conversations, warmup, seconds, bodyBytes, modes);
        System.out.printf("# machine: nproc=%d, java %s (%s), %s %s, load avg at start %s%n",
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), System.getProperty("os.name"), System.getProperty("os.version"),
                loadAvg());
        System.out.println("# temp dir: " + tmp);
        try (EmbeddedPg pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false)) {
            pg.createDatabase("bench");
            try (Database db = Database.open(pg.dbConfig("bench", senders), "bench")) {
                Database.migrate(db.dataSource());
                try (Connection c = db.connection()) {
                    printServer(c, List.of("server_version", "synchronous_commit", "fsync", "wal_level", "shared_buffers",
                            "full_page_writes", "wal_sync_method"));
                }
                String body = body(bodyBytes);
                int groups = Math.max(1, Math.min(conversations, senders / 2));
                List<String> tokens = fixtures(db, groups);
                Map<String, String> env = new LinkedHashMap<>();
                env.put("IM_PG_URL", pg.jdbcUrl("bench"));
                env.put("IM_GATEWAY_HOST", "127.0.0.1");
                env.put("IM_GATEWAY_PORT", "0");
                env.put("IM_ADMIN_PORT", "0");
                env.put("IM_ADMIN_TOKEN", "bench-admin-token-0123456789");
                env.put("IM_RATE_LIMIT", "1000000");
                env.put("IM_SEND_LANES", Integer.toString(sendLanes));
                try (Gateway gw = Gateway.start(GatewayConfig.from(Settings.of(env)), db.dataSource(), Faults.none(),
                        Clock.systemUTC())) {
                    URI uri = URI.create("ws://127.0.0.1:" + gw.port() + "/ws");
                    if (modes.contains("sdk")) runGateway("gateway sdk", uri, tokens, groups, body, tmp);
                    if (modes.contains("raw")) runGateway("gateway raw", uri, tokens, groups, body, tmp);
                    if (modes.contains("lean")) runGateway("gateway lean", uri, tokens, groups, body, tmp);
                }
                if (wantPgbench) {
                    runPgbench(pg, db, groups, body, tmp, "prepared");
                    runPgbench(pg, db, groups, body, tmp, "extended");
                }
            }
        } finally {
            if (!keep) deleteTree(tmp);
        }
        printTable();
        return 0;
    }

    // ------------------------------------------------------------------ fixtures

    private List<String> fixtures(Database db, int groups) {
        long t0 = System.nanoTime();
        Directory dir = new Directory(db.dataSource(), Clock.systemUTC());
        floor(groups).fixtures(dir, "bench sender");
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < senders; i++) {
            tokens.add(dir.registerDevice(String.valueOf(PgbenchFloor.USER_BASE + i), "g" + i).token());
        }
        System.out.printf("# fixtures: %d users, %d devices, %d conversations in %d groups (%.1f s)%n",
                senders, 2 * senders, conversations, groups, (System.nanoTime() - t0) / 1e9);
        return tokens;
    }

    private PgbenchFloor floor(int groups) {
        return new PgbenchFloor(pgbench, senders, conversations, groups);
    }

    /** The conversations sender {@code i} sends to: those of its group. */
    private List<String> convsOf(int i, int groups) {
        List<String> out = new ArrayList<>();
        for (int j = i % groups; j < conversations; j += groups) out.add(String.valueOf(PgbenchFloor.CONV_BASE + j));
        return out;
    }

    static String body(int bytes) {
        String alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        StringBuilder b = new StringBuilder(bytes);
        for (int k = 0; k < bytes; k++) b.append(alphabet.charAt((k * 7 + 3) % alphabet.length()));
        return b.toString();
    }

    // ------------------------------------------------------------------ gateway modes

    /** One closed-loop sender: sends one message and waits for its reply; returns nanoseconds. */
    interface Sender extends AutoCloseable {
        void sendOne(String conv, String body) throws Exception;

        @Override
        void close();
    }

    private void runGateway(String mode, URI uri, List<String> tokens, int groups, String body, Path tmp)
            throws Exception {
        List<Sender> conns = new ArrayList<>();
        boolean sdk = mode.endsWith("sdk");
        boolean lean = mode.endsWith("lean");
        HttpClient http = sdk || lean ? null : HttpClient.newBuilder().executor(Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "raw-ws-io");
            t.setDaemon(true);
            return t;
        })).build();
        try {
            for (int i = 0; i < senders; i++) {
                conns.add(sdk ? sdkSender(uri, tokens.get(i), tmp.resolve("client-" + mode.replace(' ', '-') + "-" + i))
                        : lean ? leanSender(uri, tokens.get(i), i)
                        : rawSender(http, uri, tokens.get(i), i));
            }
            Row r = closedLoop(mode, conns, groups, body);
            rows.add(r);
            printRow(r);
        } finally {
            for (Sender s : conns) s.close();
        }
    }

    private static Sender sdkSender(URI uri, String token, Path stateDir) throws IOException {
        // Send side only: the receive side (sub, sync, acks after connect) is not what this measures,
        // and its ack burst on connect competes with the sends for the connection's in-flight limit.
        ImClient c = ImClient.open(ClientOptions.of(uri, token, stateDir).withAutoReconnect(false)
                .withAutoReceive(false).withRequestTimeout(Duration.ofSeconds(30)));
        c.connect();
        return new Sender() {
            @Override
            public void sendOne(String conv, String body) throws Exception {
                SentAck ack = c.send(conv, body);
                if (ack.dup()) throw new IllegalStateException("unexpected dup for " + ack.cmid());
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    private Sender rawSender(HttpClient http, URI uri, String token, int idx) throws Exception {
        BlockingQueue<String> inbox = new LinkedBlockingQueue<>();
        WebSocket.Listener listener = new WebSocket.Listener() {
            private final StringBuilder buf = new StringBuilder();

            @Override
            public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                buf.append(data);
                if (last) {
                    inbox.add(buf.toString());
                    buf.setLength(0);
                }
                ws.request(1);
                return null;
            }
        };
        WebSocket ws = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10)).buildAsync(uri, listener)
                .get(10, TimeUnit.SECONDS);
        AtomicLong rid = new AtomicLong();
        String prefix = "b" + idx + "-" + Long.toString(System.nanoTime(), 36) + "-";
        ws.sendText(codec.encode(new Auth("a", token)), true).join();
        ServerFrame authed = codec.decodeServer(take(inbox));
        if (!(authed instanceof Authed)) throw new IllegalStateException("auth failed: " + authed);
        return new Sender() {
            @Override
            public void sendOne(String conv, String body) throws Exception {
                long n = rid.incrementAndGet();
                String r = "r" + n;
                ws.sendText(codec.encode(new Send(r, conv, prefix + n, body)), true).join();
                ServerFrame f = codec.decodeServer(take(inbox));
                if (!(f instanceof Sent s) || !s.rid().equals(r) || s.dup()) {
                    throw new IllegalStateException("unexpected reply " + f);
                }
            }

            @Override
            public void close() {
                ws.sendClose(WebSocket.NORMAL_CLOSURE, "bye").orTimeout(2, TimeUnit.SECONDS).exceptionally(e -> null).join();
            }
        };
    }

    /** A sender on {@link BlockingWs}: the sending thread writes the frame and reads the reply itself. */
    private Sender leanSender(URI uri, String token, int idx) throws Exception {
        BlockingWs ws = BlockingWs.open(uri);
        ws.sendText(codec.encode(new Auth("a", token)));
        ServerFrame authed = codec.decodeServer(ws.readText());
        if (!(authed instanceof Authed)) throw new IllegalStateException("auth failed: " + authed);
        String prefix = "l" + idx + "-" + Long.toString(System.nanoTime(), 36) + "-";
        long[] rid = new long[1];
        return new Sender() {
            @Override
            public void sendOne(String conv, String body) throws Exception {
                String r = "r" + ++rid[0];
                ws.sendText(codec.encode(new Send(r, conv, prefix + rid[0], body)));
                ServerFrame f = codec.decodeServer(ws.readText());
                if (!(f instanceof Sent s) || !s.rid().equals(r) || s.dup()) {
                    throw new IllegalStateException("unexpected reply " + f);
                }
            }

            @Override
            public void close() {
                ws.close();
            }
        };
    }

    private static String take(BlockingQueue<String> inbox) throws InterruptedException {
        String s = inbox.poll(30, TimeUnit.SECONDS);
        if (s == null) throw new IllegalStateException("no reply within 30 s");
        return s;
    }

    private Row closedLoop(String mode, List<Sender> conns, int groups, String body) throws Exception {
        long startNs = System.nanoTime();
        long measureFrom = startNs + TimeUnit.SECONDS.toNanos(warmup);
        long measureTo = measureFrom + TimeUnit.SECONDS.toNanos(seconds);
        List<Histogram> hs = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong errors = new AtomicLong();
        CountDownLatch done = new CountDownLatch(conns.size());
        CpuSample[] cpu = new CpuSample[1];
        ExecutorService pool = Executors.newFixedThreadPool(conns.size());
        Thread sampler = new Thread(() -> {
            try {
                Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(measureFrom - System.nanoTime())));
                cpu[0] = CpuSample.now();
            } catch (InterruptedException ignored) {
                // stopped
            }
        });
        sampler.start();
        for (int i = 0; i < conns.size(); i++) {
            Histogram h = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
            hs.add(h);
            Sender s = conns.get(i);
            List<String> convs = convsOf(i, groups);
            pool.execute(() -> {
                try {
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    while (true) {
                        String conv = convs.get(rnd.nextInt(convs.size()));
                        long t0 = System.nanoTime();
                        if (t0 >= measureTo) break;
                        try {
                            s.sendOne(conv, body);
                        } catch (Exception e) {
                            if (errors.incrementAndGet() == 1) failure.set(e);
                            if (errors.get() > 100) break;
                            continue;
                        }
                        long t1 = System.nanoTime();
                        if (t0 >= measureFrom && t1 <= measureTo) h.recordValue(Math.max(1, (t1 - t0) / 1000));
                    }
                } finally {
                    done.countDown();
                }
            });
        }
        done.await();
        pool.shutdown();
        sampler.join();
        CpuSample end = CpuSample.now();
        if (failure.get() != null) {
            System.err.println("# " + mode + ": " + errors.get() + " failed sends; first: " + failure.get());
        }
        Histogram all = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        hs.forEach(all::add);
        double[] busy = cpu[0] == null ? new double[] {Double.NaN, Double.NaN} : cpu[0].until(end);
        return new Row(mode, conns.size(), conversations, all.getTotalCount(), seconds, all, busy[0], busy[1],
                load1(), errors.get() == 0 ? "" : errors.get() + " errors");
    }

    // ------------------------------------------------------------------ pgbench

    private void runPgbench(EmbeddedPg pg, Database db, int groups, String body, Path tmp, String protocol) throws Exception {
        CpuSample[] cpu = new CpuSample[1];
        PgbenchFloor.Result f = floor(groups).run(db, pg.port(), EmbeddedPg.USER, EmbeddedPg.PASSWORD, "bench", body, protocol,
                warmup, seconds, tmp, () -> cpu[0] = CpuSample.now());
        CpuSample end = CpuSample.now();
        double[] busy = cpu[0] == null ? new double[] {Double.NaN, Double.NaN} : cpu[0].until(end);
        Row r = new Row(f.mode(), senders, conversations, f.latencyMicros().getTotalCount(), seconds, f.latencyMicros(),
                busy[0], busy[1], load1(), String.format(Locale.ROOT, "pgbench itself: %.0f tps, avg %.2f ms over %d s incl. warm-up",
                f.tps(), f.avgMs(), warmup + seconds));
        rows.add(r);
        printRow(r);
    }

    // ------------------------------------------------------------------ output

    private static void printRow(Row r) {
        System.out.printf(Locale.ROOT, "# %-20s %d sends in %d s: %.0f/s p50 %.2f ms p99 %.2f ms p99.9 %.2f ms max %.2f ms;"
                        + " machine CPU busy %.0f%%, this JVM %.0f%% of the machine, load avg %s %s%n",
                r.mode(), r.count(), (int) r.seconds(), r.rate(), r.ms(50), r.ms(99), r.ms(99.9), r.h().getMaxValue() / 1000.0,
                r.cpuBusy() * 100, r.jvmCpu() * 100, r.load(), r.note().isEmpty() ? "" : "(" + r.note() + ")");
    }

    private void printTable() {
        if (rows.isEmpty()) return;
        System.out.println();
        System.out.printf("%-20s %7s %6s %9s %8s %8s %8s %8s %6s %6s %6s%n",
                "mode", "clients", "convs", "sends/s", "p50 ms", "p99 ms", "p99.9", "max ms", "cpu%", "jvm%", "load");
        for (Row r : rows) {
            System.out.printf(Locale.ROOT, "%-20s %7d %6d %9.0f %8.2f %8.2f %8.2f %8.2f %6.0f %6.0f %6s%n",
                    r.mode(), r.clients(), r.convs(), r.rate(), r.ms(50), r.ms(99), r.ms(99.9),
                    r.h().getMaxValue() / 1000.0, r.cpuBusy() * 100, r.jvmCpu() * 100, r.load());
        }
        Row floor = rows.stream().filter(r -> r.mode().equals("pgbench -M prepared")).findFirst().orElse(null);
        if (floor != null) {
            System.out.println();
            for (Row r : rows) {
                if (!r.mode().startsWith("gateway")) continue;
                System.out.printf(Locale.ROOT, "%-12s / pgbench -M prepared: throughput %.2fx, p50 %.2fx, p99 %.2fx%n",
                        r.mode(), r.rate() / floor.rate(), r.ms(50) / floor.ms(50), r.ms(99) / floor.ms(99));
            }
        }
    }

    /** Machine CPU (from /proc/stat) and this JVM's CPU time at one instant. */
    record CpuSample(long busy, long total, long jvmNanos, long wallNanos) {
        static CpuSample now() {
            long busy = 0;
            long total = 0;
            try {
                String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
                for (int k = 1; k < f.length && k <= 8; k++) {
                    long v = Long.parseLong(f[k]);
                    total += v;
                    if (k != 4 && k != 5) busy += v;   // idle, iowait
                }
            } catch (IOException | RuntimeException e) {
                // not Linux: report NaN
            }
            long jvm = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                    .getProcessCpuTime();
            return new CpuSample(busy, total, jvm, System.nanoTime());
        }

        /** {machine busy fraction, JVM share of the whole machine}. */
        double[] until(CpuSample end) {
            double machine = end.total == total ? Double.NaN : (double) (end.busy - busy) / (end.total - total);
            double jvm = (double) (end.jvmNanos - jvmNanos)
                    / ((end.wallNanos - wallNanos) * (double) Runtime.getRuntime().availableProcessors());
            return new double[] {machine, jvm};
        }
    }
}
