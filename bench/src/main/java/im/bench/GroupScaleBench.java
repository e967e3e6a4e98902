package im.bench;

import static im.bench.BenchEnv.deleteTree;
import static im.bench.BenchEnv.loadAvg;

import im.delivery.route.DeliveryTopology;
import im.infra.kafka.TopicNames;
import im.sweeper.SweeperTopology;
import im.topics.ChannelRecord;
import im.topics.CursorRecord;
import im.topics.EventRecord;
import im.topics.Heartbeat;
import im.topics.Interest;
import im.topics.InterestRecord;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * How the CPU cost of the two routing topologies grows with the size of ONE group conversation.
 * Both topologies are built only through their public {@code build(...)} methods and driven only
 * through their input and output topics (never their state stores, whose layout may change), with
 * real RocksDB stores, each in its own {@link TopologyTestDriver} with a mocked wall clock.
 *
 * <p>Per size M (members): one conversation; setup (not timed) is its M join events (seq 1..M, one
 * per member, as the log holds them today), the heartbeats of the gateways and one interest
 * registration per online device (O = min(25 % of M, 2,000) members online, one device each,
 * spread over the gateways), their cursors at the head. Then, timed with the measuring thread's CPU time:
 * <ol type="a">
 *   <li><b>events</b>: E message events, fed to both topologies: CPU per event for each, and the
 *       delivery's CPU per push (a device entry of a routed {@link ChannelRecord.Push});</li>
 *   <li><b>cursors</b>: after each event, the cursor records of the online devices, coalesced as
 *       the ack throttle does (one record per device per 4 events, staggered), each catching up to
 *       the event's seq; CPU per cursor record in the sweeper;</li>
 *   <li><b>re-sends</b>: every online device's registration written again (same connection
 *       version, later {@code at}), as a gateway does when a digest disagreed (rare; idle upkeep is
 *       one digest per gateway and partition per interval): CPU per re-sent registration;</li>
 *   <li><b>sweep ticks</b>: with every cursor at the head, ticks of the sweeper's wall-clock
 *       punctuation: CPU per tick and hints emitted (expected 0). Then devices that lag only as
 *       the ack throttle makes them: events at 10/s of wall-clock time, every device gets every
 *       push (from the delivery topology's output), and its cursor record, one per 4 events, names
 *       what it held before the newest push (so the cursor trails the head by 1..4 events): hints
 *       per device-minute, and the share of hints naming a head the device already held (from its
 *       pushes) when the hint was emitted ("needless").</li>
 * </ol>
 * Thread CPU leaves out RocksDB's background threads (memtable flushes, compactions) and GC; the
 * detail lines also give the process CPU of each whole phase.
 */
@Command(name = "group-scale-bench", mixinStandardHelpOptions = true,
        description = "CPU of the delivery and sweeper topologies per event, push, cursor, re-sent registration and sweep tick as one group grows")
public final class GroupScaleBench implements Callable<Integer> {
    private static final TopicNames TOPICS = new TopicNames("gsb.");
    private static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");
    private static final long GEN = 1;
    private static final int EPOCH = 1;
    private static final String BODY = "a message of ordinary length, about as long as people type in a group chat";
    /** Records piped between two drains of the captured output (changelogs are captured in memory). */
    private static final int SLICE = 50;

    @Option(names = "--members", split = ",", description = "group sizes, default ${DEFAULT-VALUE}")
    List<Integer> members = List.of(100, 1_000, 10_000);
    @Option(names = "--online-fraction", description = "share of members online (one device each), default ${DEFAULT-VALUE}")
    double onlineFraction = 0.25;
    @Option(names = "--online-cap", description = "most online devices, default ${DEFAULT-VALUE}")
    int onlineCap = 2_000;
    @Option(names = "--events", description = "message events per size (phases a, b), default ${DEFAULT-VALUE}")
    int events = 200;
    @Option(names = "--event-budget", description = "cap on events x members per size: a larger group gets fewer events"
            + " (never fewer than --min-events); default ${DEFAULT-VALUE}")
    long eventBudget = 200_000;
    @Option(names = "--min-events", description = "least events per size, default ${DEFAULT-VALUE}")
    int minEvents = 20;
    @Option(names = "--gateways", description = "gateways (heartbeating, generation 1), default ${DEFAULT-VALUE}")
    int gateways = 4;
    @Option(names = "--ack-every", description = "events per cursor record of a device (the ack throttle), default ${DEFAULT-VALUE}")
    int ackEvery = 4;
    @Option(names = "--ticks", description = "measured sweep ticks with every cursor at the head, default ${DEFAULT-VALUE}")
    int ticks = 5;
    @Option(names = "--lag-seconds", description = "wall-clock seconds of the lagging variant (events at 1 per --event-interval-ms),"
            + " default ${DEFAULT-VALUE}")
    int lagSeconds = 6;
    @Option(names = "--event-interval-ms", description = "wall-clock ms between events in the lagging variant, default ${DEFAULT-VALUE}")
    long eventIntervalMs = 100;
    @Option(names = "--sweep-ms", description = "IM_SWEEP_MS, default ${DEFAULT-VALUE}")
    long sweepMs = 1_000;
    @Option(names = "--backoff-ms", description = "IM_HINT_BACKOFF_MS, default ${DEFAULT-VALUE}")
    long backoffMs = 2_000;
    @Option(names = "--lease-ms", description = "IM_GATEWAY_LEASE_MS, default ${DEFAULT-VALUE}")
    long leaseMs = 10_000;
    @Option(names = "--renew-ms", description = "IM_INTEREST_RENEW_MS, default ${DEFAULT-VALUE}")
    long renewMs = 10_000;
    @Option(names = "--heartbeat-ms", description = "IM_GATEWAY_HEARTBEAT_MS, default ${DEFAULT-VALUE}")
    long heartbeatMs = 2_000;
    @Option(names = "--warmup-members", description = "throwaway size run first for the JIT (0: none), default ${DEFAULT-VALUE}")
    int warmupMembers = 1_000;
    @Option(names = "--chart", description = "also write a log-log chart (PNG, XChart) of the per-unit costs against the"
            + " group size to this file")
    Path chart;
    @Option(names = "--chart-title", description = "the chart's title, default ${DEFAULT-VALUE}")
    String chartTitle = "Routing cost per unit as one group grows";
    @Option(names = "--work-dir", description = "parent of the temp dir (state dirs); default java.io.tmpdir")
    Path workDir;

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "bench-logback.xml");
        }
        System.exit(new CommandLine(new GroupScaleBench()).execute(args));
    }

    // ------------------------------------------------------------------ measurement

    /** Accumulated thread CPU and wall time over some units of work. */
    final class Meter {
        long units;
        long cpu;
        long wall;
        private long c0;
        private long w0;

        void start() {
            w0 = System.nanoTime();
            c0 = threads.getCurrentThreadCpuTime();
        }

        void stop(long n) {
            cpu += threads.getCurrentThreadCpuTime() - c0;
            wall += System.nanoTime() - w0;
            units += n;
        }

        double cpuUs() {
            return units == 0 ? Double.NaN : cpu / 1e3 / units;
        }

        double wallUs() {
            return units == 0 ? Double.NaN : wall / 1e3 / units;
        }

        /** Thread CPU per some other count (e.g. per push), in µs. */
        double cpuUsPer(long n) {
            return n == 0 ? Double.NaN : cpu / 1e3 / n;
        }

        String line(String unit) {
            return String.format(Locale.ROOT, "%d %s: %.1f us cpu (wall %.1f) each", units, unit, cpuUs(), wallUs());
        }
    }

    /**
     * The process's CPU over a whole phase (every thread: RocksDB's flushes and compactions, GC, the
     * harness building and reading records), beside the thread CPU measured in it. The JVM reads
     * process CPU in 10 ms ticks, so only phase totals are given.
     */
    final class ProcessCpu {
        private final long p0 = os.getProcessCpuTime();
        private final long w0 = System.nanoTime();

        String line(Meter... measured) {
            long cpu = 0;
            for (Meter m : measured) cpu += m.cpu;
            return String.format(Locale.ROOT, "phase: process cpu %.0f ms, wall %.0f ms, of which measured thread cpu %.0f ms",
                    (os.getProcessCpuTime() - p0) / 1e6, (System.nanoTime() - w0) / 1e6, cpu / 1e6);
        }
    }

    /** The figures of one size. */
    record Result(int members, int online, int events, double evDelivery, double evSweeper, double push, double pushSweeper,
                  double cursor,
                  double renewDelivery, double renewSweeper, double tickMs, double lagTickMs, double hintsPerDevMin,
                  double needlessPct) {}

    /** The table's columns: header, format, figure. */
    record Col(String head, String fmt, ToDoubleFunction<Result> get) {}

    private static final List<Col> COLS = List.of(
            new Col("ev deliv us", "%11.1f", Result::evDelivery),
            new Col("ev sweep us", "%11.1f", Result::evSweeper),
            new Col("push deliv us", "%13.2f", Result::push),
            new Col("push sweep us", "%13.2f", Result::pushSweeper),
            new Col("cursor us", "%9.1f", Result::cursor),
            new Col("resend deliv us", "%14.1f", Result::renewDelivery),
            new Col("resend sweep us", "%14.1f", Result::renewSweeper),
            new Col("tick ms", "%8.2f", Result::tickMs),
            new Col("lag tick ms", "%11.2f", Result::lagTickMs),
            new Col("hints/dev-min", "%13.1f", Result::hintsPerDevMin),
            new Col("needless %", "%10.1f", Result::needlessPct));

    // ------------------------------------------------------------------ the group

    /** One conversation of {@code members} members; {@code online} of them (spread evenly) have one device online. */
    static final class Group {
        final String conv;
        final int members;
        final int online;
        final int[] onlineMember;   // online device i belongs to member onlineMember[i]
        final int sender;           // a member with no device online, when there is one

        Group(int members, int online) {
            this.conv = "grp-" + members;
            this.members = members;
            this.online = online;
            this.onlineMember = new int[online];
            boolean[] on = new boolean[members];
            for (int i = 0; i < online; i++) {
                onlineMember[i] = (int) ((long) i * members / online);
                on[onlineMember[i]] = true;
            }
            int s = 0;
            while (s < members && on[s]) s++;
            this.sender = s < members ? s : 0;
        }

        static String user(int member) {
            return "u" + member;
        }

        static String device(int member) {
            return "d" + member;
        }
    }

    // ------------------------------------------------------------------ one topology in a test driver

    /** A topology in a TopologyTestDriver with its own state dir, its mocked wall clock and its input topics. */
    final class Side implements AutoCloseable {
        final String name;
        final TopologyTestDriver driver;
        final Path stateDir;
        final TestInputTopic<String, String> eventsIn;
        final TestInputTopic<String, String> interestIn;
        final TestInputTopic<String, String> cursorsIn;
        final TestInputTopic<String, String> heartbeatsIn;
        final Set<String> channelTopics = new HashSet<>();
        final Map<String, TestOutputTopic<String, String>> channels = new HashMap<>();
        final Map<String, TestOutputTopic<byte[], byte[]>> others = new HashMap<>();
        long now = T0.toEpochMilli();
        long lastHeartbeat = Long.MIN_VALUE;
        long drainedOther;

        Side(String name, Topology topology, Path stateDir) throws IOException {
            this.name = name;
            this.stateDir = stateDir;
            Files.createDirectories(stateDir);
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, "group-scale-" + name);
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
            p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");   // as StreamsApps runs both roles
            driver = new TopologyTestDriver(topology, p, T0);
            StringSerializer ser = new StringSerializer();
            eventsIn = driver.createInputTopic(TOPICS.events(), ser, ser);
            interestIn = driver.createInputTopic(TOPICS.interest(), ser, ser);
            cursorsIn = driver.createInputTopic(TOPICS.cursors(), ser, ser);
            heartbeatsIn = driver.createInputTopic(TOPICS.gateways(), ser, ser);
            for (int g = 0; g < gateways; g++) channelTopics.add(TOPICS.channel(gateway(g)));
        }

        void pipe(TestInputTopic<String, String> in, String key, String value) {
            in.pipeInput(key, value, Instant.ofEpochMilli(now));
        }

        /** Every gateway heartbeats now (key: gateway id, as PushHub publishes). */
        void heartbeats() {
            for (int g = 0; g < gateways; g++) {
                pipe(heartbeatsIn, gateway(g), new Heartbeat(gateway(g), GEN, now).toJson());
            }
            lastHeartbeat = now;
        }

        void heartbeatIfDue() {
            if (now - lastHeartbeat >= heartbeatMs) heartbeats();
        }

        void advance(long ms) {
            now += ms;
            driver.advanceWallClockTime(Duration.ofMillis(ms));
        }

        /** Advances the clock in steps of at most the heartbeat interval, the gateways heartbeating after each. */
        void advanceWithHeartbeats(long ms) {
            while (ms > 0) {
                long step = Math.min(ms, heartbeatMs);
                advance(step);
                heartbeats();
                ms -= step;
                drain();
            }
        }

        /** What the topology wrote to the gateways' channels since the last drain; anything else (changelogs, notices) is dropped. */
        List<ChannelRecord> drain() {
            List<ChannelRecord> out = new ArrayList<>();
            for (String t : driver.producedTopicNames()) {
                if (channelTopics.contains(t)) {
                    TestOutputTopic<String, String> o = channels.computeIfAbsent(t,
                            k -> driver.createOutputTopic(k, new StringDeserializer(), new StringDeserializer()));
                    for (String v : o.readValuesToList()) out.add(ChannelRecord.read(v));
                } else {
                    TestOutputTopic<byte[], byte[]> o = others.computeIfAbsent(t,
                            k -> driver.createOutputTopic(k, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
                    while (!o.isEmpty()) {
                        o.readRecord();
                        drainedOther++;
                    }
                }
            }
            return out;
        }

        @Override
        public void close() {
            try {
                driver.close();
            } finally {
                deleteTree(stateDir);
            }
        }
    }

    private static String gateway(int g) {
        return "gw-" + g;
    }

    // ------------------------------------------------------------------ the run

    @Override
    public Integer call() throws Exception {
        if (members.isEmpty() || members.stream().anyMatch(m -> m < 2) || events < 1 || ackEvery < 1 || gateways < 1
                || ticks < 1 || lagSeconds < 1 || eventIntervalMs < 1 || sweepMs % eventIntervalMs != 0
                || onlineFraction <= 0 || onlineFraction > 1 || onlineCap < 1) {
            System.err.println("members >= 2; events, ack-every, gateways, ticks, lag-seconds >= 1; 0 < online-fraction <= 1;"
                    + " sweep-ms a multiple of event-interval-ms");
            return 2;
        }
        if (!threads.isCurrentThreadCpuTimeSupported()) {
            System.err.println("thread CPU time not supported by this JVM");
            return 2;
        }
        threads.setThreadCpuTimeEnabled(true);
        Path tmp = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir,
                "group-scale-bench-");
        System.out.printf(Locale.ROOT, "# group scale bench, %s%n", ZonedDateTime.now());
        System.out.printf(Locale.ROOT, "# machine: nproc=%d, java %s (%s, %s), %s %s, max heap %d MB, load avg at start %s%n",
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("os.name"),
                System.getProperty("os.version"), Runtime.getRuntime().maxMemory() >> 20, loadAvg());
        System.out.printf(Locale.ROOT, "# one group; members %s; online %.0f %% of members, at most %d, one device each, over %d"
                        + " gateways (generation 1); events %d per size (events x members <= %d, at least %d);"
                        + " one cursor record per device per %d events; sweep %d ms, hint backoff %d ms, lease %d ms,"
                        + " renew %d ms, heartbeats every %d ms; lagging variant %d s at one event per %d ms%n",
                members, onlineFraction * 100, onlineCap, gateways, events, eventBudget, minEvents, ackEvery, sweepMs,
                backoffMs, leaseMs, renewMs, heartbeatMs, lagSeconds, eventIntervalMs);
        System.out.println("# DeliveryTopology.build and SweeperTopology.build, real RocksDB stores, each in a TopologyTestDriver"
                + " (commits after every input record); cpu = the measuring thread's CPU time (RocksDB background threads and GC"
                + " not included; the detail lines give each phase's process CPU, which does)");
        long runStart = System.nanoTime();
        List<Result> results = new ArrayList<>();
        try {
            if (warmupMembers > 0) {
                long t0 = System.nanoTime();
                run(warmupMembers, Math.min(events, 100), lagSeconds, tmp.resolve("warmup"), false);
                System.out.printf(Locale.ROOT, "# warm-up (members %d, not reported) took %.1f s%n", warmupMembers,
                        (System.nanoTime() - t0) / 1e9);
            }
            for (int m : members) {
                int e = (int) Math.max(minEvents, Math.min(events, eventBudget / m));
                results.add(run(m, e, lagSeconds, tmp.resolve("m" + m), true));
            }
        } finally {
            deleteTree(tmp);
        }
        System.out.printf(Locale.ROOT, "%n# run took %.0f s; load avg at end %s%n", (System.nanoTime() - runStart) / 1e9, loadAvg());
        printTable(results);
        if (chart != null) writeChart(results);
        return 0;
    }

    private Result run(int m, int e, int lagSecs, Path dir, boolean print) throws IOException {
        int online = (int) Math.max(1, Math.min(onlineCap, Math.round(m * onlineFraction)));
        Group grp = new Group(m, online);
        LongAdder hintCount = new LongAdder();
        long runStart = System.nanoTime();
        if (print) {
            System.out.printf(Locale.ROOT, "%n# members=%d online=%d events=%d; load avg %s%n", m, online, e, loadAvg());
        }
        try (Side dl = new Side("delivery", DeliveryTopology.build(TOPICS, Duration.ofMillis(leaseMs), Duration.ofMillis(renewMs)),
                dir.resolve("delivery"));
             Side sw = new Side("sweeper", SweeperTopology.build(TOPICS, Duration.ofMillis(sweepMs), Duration.ofMillis(backoffMs),
                     Duration.ofMillis(leaseMs), Duration.ofMillis(renewMs), hintCount), dir.resolve("sweeper"))) {
            String conv = grp.conv;
            // ---------------------------------------------------------- 1. setup (not in the table)
            dl.heartbeats();
            sw.heartbeats();
            ProcessCpu pJoin = new ProcessCpu();
            Meter dJoin = new Meter();
            Meter sJoin = new Meter();
            for (int i = 0; i < m; i++) {
                long seq = i + 1;
                String join = new EventRecord(conv, seq, "join", mid(conv, seq), Group.user(i), null, null, "", dl.now).toJson();
                dJoin.start();
                dl.pipe(dl.eventsIn, conv, join);
                dJoin.stop(1);
                sJoin.start();
                sw.pipe(sw.eventsIn, conv, join);
                sJoin.stop(1);
                if (i % SLICE == SLICE - 1) {
                    dl.drain();
                    sw.drain();
                }
            }
            dl.drain();
            sw.drain();
            String joinPhase = pJoin.line(dJoin, sJoin);
            ProcessCpu pReg = new ProcessCpu();
            long ver0 = T0.toEpochMilli() * 1000;
            Meter dReg = new Meter();
            Meter sReg = new Meter();
            for (int i = 0; i < online; i++) {
                int mem = grp.onlineMember[i];
                String reg = new InterestRecord(conv, Group.device(mem),
                        new Interest(Group.user(mem), gateway(i % gateways), GEN, ver0 + i, true, dl.now)).toJson();
                dReg.start();
                dl.pipe(dl.interestIn, conv, reg);
                dReg.stop(1);
                sReg.start();
                sw.pipe(sw.interestIn, conv, reg);
                sReg.stop(1);
                if (i % SLICE == SLICE - 1) {
                    dl.drain();
                    sw.drain();
                }
            }
            dl.drain();
            sw.drain();
            String regPhase = pReg.line(dReg, sReg);
            // The online devices hold the history: their cursors are at the head before the run starts (not timed).
            List<String> caughtUp = new ArrayList<>();
            for (int i = 0; i < online; i++) {
                caughtUp.add(new CursorRecord.Update(conv, Group.device(grp.onlineMember[i]), EPOCH, m, sw.now).toJson());
            }
            pipeTimed(sw, sw.cursorsIn, conv, caughtUp, new Meter());
            if (!sw.drain().isEmpty()) System.out.println("#   WARNING: channel records during setup");
            if (print) {
                System.out.printf(Locale.ROOT, "#   setup (not in the table): joins: delivery %s; sweeper %.1f us cpu each; %s%n"
                                + "#   setup: registrations: delivery %s; sweeper %.1f us cpu each; %s%n",
                        dJoin.line("joins"), sJoin.cpuUs(), joinPhase, dReg.line("registrations"), sReg.cpuUs(), regPhase);
            }

            // ---------------------------------------------------------- a, b. events and cursors
            long head = m;
            long[] cursor = new long[online];
            long[] held = new long[online];
            java.util.Arrays.fill(cursor, m);
            java.util.Arrays.fill(held, m);
            Map<String, Integer> idx = new HashMap<>();
            for (int i = 0; i < online; i++) idx.put(Group.device(grp.onlineMember[i]), i);
            ProcessCpu pEv = new ProcessCpu();
            Meter dEv = new Meter();
            Meter sEv = new Meter();
            Meter sCur = new Meter();
            long pushes = 0;
            long pushRecords = 0;
            long unexpected = 0;
            List<String> batch = new ArrayList<>();
            for (int j = 1; j <= e; j++) {
                long seq = ++head;
                String ev = msg(conv, seq, grp, dl.now);
                dEv.start();
                dl.pipe(dl.eventsIn, conv, ev);
                dEv.stop(1);
                for (ChannelRecord r : dl.drain()) {
                    if (r instanceof ChannelRecord.Push p) {
                        pushRecords++;
                        pushes += p.devices().size();
                        for (String d : p.devices()) held[idx.get(d)] = Math.max(held[idx.get(d)], p.ev().seq());
                    } else {
                        unexpected++;
                    }
                }
                sEv.start();
                sw.pipe(sw.eventsIn, conv, ev);
                sEv.stop(1);
                unexpected += sw.drain().size();
                batch.clear();
                for (int i = 0; i < online; i++) {
                    if ((j + i) % ackEvery != 0) continue;
                    batch.add(new CursorRecord.Update(conv, Group.device(grp.onlineMember[i]), EPOCH, seq, sw.now).toJson());
                    cursor[i] = seq;
                }
                pipeTimed(sw, sw.cursorsIn, conv, batch, sCur);
                unexpected += sw.drain().size();
            }
            batch.clear();   // the devices that acked before the last events catch up too
            for (int i = 0; i < online; i++) {
                if (cursor[i] == head) continue;
                batch.add(new CursorRecord.Update(conv, Group.device(grp.onlineMember[i]), EPOCH, head, sw.now).toJson());
                cursor[i] = head;
            }
            pipeTimed(sw, sw.cursorsIn, conv, batch, sCur);
            unexpected += sw.drain().size();
            if (pushes != (long) e * online) {
                System.out.printf("#   WARNING: %d pushes for %d events x %d online devices%n", pushes, e, online);
            }
            if (unexpected != 0) System.out.printf("#   WARNING: %d unexpected channel records (hints) in phases a, b%n", unexpected);
            String evPhase = pEv.line(dEv, sEv, sCur);

            // ---------------------------------------------------------- c. re-sends
            dl.advanceWithHeartbeats(renewMs);
            sw.advanceWithHeartbeats(renewMs);
            sw.drain();
            List<String> resends = resends(grp, ver0, dl.now);
            ProcessCpu pRen = new ProcessCpu();
            Meter dRen = new Meter();
            Meter sRen = new Meter();
            pipeTimed(dl, dl.interestIn, conv, resends, dRen);
            long dOut = dl.drain().size();
            pipeTimed(sw, sw.interestIn, conv, resends, sRen);
            long sOut = sw.drain().size();
            if (dOut + sOut != 0) System.out.printf("#   WARNING: %d channel records after re-sends%n", dOut + sOut);
            long lastRenewal = sw.now;
            String renPhase = pRen.line(dRen, sRen);

            // ---------------------------------------------------------- d. sweep ticks, every cursor at the head
            ProcessCpu pTick = new ProcessCpu();
            Meter tick = new Meter();
            long headHints = 0;
            long headHintsAdder = 0;
            for (int t = 0; t < ticks; t++) {
                sw.heartbeats();
                long next = nextTick(sw.now);
                if (next - 1 > sw.now) sw.advance(next - 1 - sw.now);
                sw.drain();
                long h0 = hintCount.sum();
                tick.start();
                sw.advance(1);
                tick.stop(1);
                headHintsAdder += hintCount.sum() - h0;
                for (ChannelRecord r : sw.drain()) headHints += r.devices().size();
            }

            // ---------------------------------------------------------- d'. devices lagging as the ack throttle makes them
            String tickPhase = pTick.line(tick);
            // Both clocks move together: one event per interval, ticks at every multiple of the sweep interval.
            ProcessCpu pLag = new ProcessCpu();
            dl.advance(sw.now - dl.now);
            dl.heartbeats();
            sw.heartbeats();
            dl.drain();
            sw.drain();
            Meter lagTick = new Meter();
            long lagHints = 0;
            long needless = 0;
            long coveredByCursor = 0;
            long lagEvents = lagSecs * 1000L / eventIntervalMs;
            long lagStart = sw.now;
            long lagPushes = 0;
            for (long j = 1; j <= lagEvents; j++) {
                boolean tickNow = nextTick(sw.now) <= sw.now + eventIntervalMs;
                long h0 = hintCount.sum();
                if (tickNow) lagTick.start();
                sw.advance(eventIntervalMs);
                if (tickNow) lagTick.stop(1);
                dl.advance(eventIntervalMs);
                long emitted = hintCount.sum() - h0;
                long listed = 0;
                for (ChannelRecord r : sw.drain()) {
                    if (!(r instanceof ChannelRecord.HintFor h)) continue;
                    for (String d : h.devices()) {
                        listed++;
                        int i = idx.get(d);
                        if (held[i] >= h.head()) needless++;
                        if (cursor[i] >= h.head()) coveredByCursor++;
                    }
                }
                if (listed != emitted) System.out.printf("#   WARNING: hint adder says %d, channels list %d%n", emitted, listed);
                lagHints += listed;
                dl.heartbeatIfDue();
                sw.heartbeatIfDue();
                if (sw.now - lastRenewal >= renewMs) {   // the gateways write their digests as they do every interval (not timed)
                    List<String> digests = digests(grp, ver0, sw.now);
                    pipeTimed(dl, dl.interestIn, conv, digests, new Meter());
                    pipeTimed(sw, sw.interestIn, conv, digests, new Meter());
                    lastRenewal = sw.now;
                }
                long[] before = held.clone();
                long seq = ++head;
                String ev = msg(conv, seq, grp, dl.now);
                dl.pipe(dl.eventsIn, conv, ev);
                for (ChannelRecord r : dl.drain()) {
                    if (r instanceof ChannelRecord.Push p) {
                        lagPushes += p.devices().size();
                        for (String d : p.devices()) held[idx.get(d)] = Math.max(held[idx.get(d)], p.ev().seq());
                    }
                }
                sw.pipe(sw.eventsIn, conv, ev);
                sw.drain();
                // The throttled cursor write goes out before this event's ack: it names what the device held before.
                batch.clear();
                for (int i = 0; i < online; i++) {
                    if ((j + i) % ackEvery != 0 || before[i] <= cursor[i]) continue;
                    batch.add(new CursorRecord.Update(conv, Group.device(grp.onlineMember[i]), EPOCH, before[i], sw.now).toJson());
                    cursor[i] = before[i];
                }
                pipeTimed(sw, sw.cursorsIn, conv, batch, new Meter());
                sw.drain();
            }
            double lagSecsRun = (sw.now - lagStart) / 1e3;
            String lagPhase = pLag.line(lagTick);
            if (lagPushes != lagEvents * online) {
                System.out.printf("#   WARNING: %d pushes in the lagging variant for %d events x %d online devices%n",
                        lagPushes, lagEvents, online);
            }
            double hintsPerDevSec = lagHints / (double) online / lagSecsRun;
            Result r = new Result(m, online, e, dEv.cpuUs(), sEv.cpuUs(), dEv.cpuUsPer(pushes), sEv.cpuUsPer(pushes), sCur.cpuUs(),
                    dRen.cpuUs(), sRen.cpuUs(), tick.cpuUs() / 1e3, lagTick.cpuUs() / 1e3, hintsPerDevSec * 60,
                    lagHints == 0 ? 0 : 100.0 * needless / lagHints);
            if (print) {
                System.out.printf(Locale.ROOT, "#   a. events: delivery %s (%d pushes in %d records: %.2f us cpu per push);"
                                + " sweeper %.1f us cpu (wall %.1f) each%n",
                        dEv.line("events"), pushes, pushRecords, r.push(), sEv.cpuUs(), sEv.wallUs());
                System.out.printf(Locale.ROOT, "#   b. cursors: sweeper %s%n", sCur.line("cursor records"));
                System.out.printf(Locale.ROOT, "#   a+b. %s%n", evPhase);
                System.out.printf(Locale.ROOT, "#   c. re-sends: delivery %s; sweeper %.1f us cpu (wall %.1f) each; %s%n",
                        dRen.line("re-sent registrations"), sRen.cpuUs(), sRen.wallUs(), renPhase);
                System.out.printf(Locale.ROOT, "#   d. %d ticks, cursors at the head: %.3f ms cpu (wall %.3f) each,"
                                + " %d hint device entries on the channels (hint counter: %d); %s%n",
                        tick.units, tick.cpuUs() / 1e3, tick.wallUs() / 1e3, headHints, headHintsAdder, tickPhase);
                System.out.printf(Locale.ROOT, "#   d. lagging (acks throttled, cursors 1..%d events behind): %d events in %.0f s,"
                                + " %d ticks at %.3f ms cpu (wall %.3f) each; %d hint device entries ="
                                + " %.3f per device per s (%.1f per device-minute); needless (device held the hinted head"
                                + " when it was emitted): %d = %.1f %%; hinted head already covered by the device's last"
                                + " cursor record: %d; %s (incl. the untimed events, cursor records and digests)%n",
                        ackEvery, lagEvents, lagSecsRun, lagTick.units, lagTick.cpuUs() / 1e3,
                        lagTick.wallUs() / 1e3, lagHints, hintsPerDevSec, hintsPerDevSec * 60, needless, r.needlessPct(),
                        coveredByCursor, lagPhase);
                System.out.printf(Locale.ROOT, "#   size done in %.1f s; load avg %s%n", (System.nanoTime() - runStart) / 1e9, loadAvg());
            }
            return r;
        }
    }

    /** Pipes the values in slices, timing only the pipes; the captured output is drained between slices. */
    private void pipeTimed(Side side, TestInputTopic<String, String> in, String key, List<String> values, Meter meter) {
        for (int from = 0; from < values.size(); from += SLICE) {
            int to = Math.min(values.size(), from + SLICE);
            meter.start();
            for (int k = from; k < to; k++) side.pipe(in, key, values.get(k));
            meter.stop(to - from);
            side.drain();
        }
    }

    /** Each gateway's digest of the group's partition (the driver's only one): what it holds, so nothing is asked. */
    private List<String> digests(Group grp, long ver0, long at) {
        long[] count = new long[gateways];
        long[] sum = new long[gateways];
        for (int i = 0; i < grp.online; i++) {
            count[i % gateways]++;
            sum[i % gateways] += im.topics.InterestDigest.term(grp.conv, Group.device(grp.onlineMember[i]), ver0 + i);
        }
        List<String> out = new ArrayList<>(gateways);
        for (int g = 0; g < gateways; g++) {
            out.add(new im.topics.InterestDigest(gateway(g), GEN, 0, count[g], sum[g], at).toJson());
        }
        return out;
    }

    /** Every online device's interest again: same connection version, written again at {@code at} (a re-send). */
    private List<String> resends(Group grp, long ver0, long at) {
        List<String> out = new ArrayList<>(grp.online);
        for (int i = 0; i < grp.online; i++) {
            int mem = grp.onlineMember[i];
            out.add(new InterestRecord(grp.conv, Group.device(mem),
                    new Interest(Group.user(mem), gateway(i % gateways), GEN, ver0 + i, true, at)).toJson());
        }
        return out;
    }

    /** The first sweep punctuation strictly after {@code now} (wall-clock punctuations keep to the T0 + k x interval grid). */
    private long nextTick(long now) {
        long t0 = T0.toEpochMilli();
        return t0 + ((now - t0) / sweepMs + 1) * sweepMs;
    }

    private static String mid(String conv, long seq) {
        return new UUID(conv.hashCode() & 0xffffffffL, seq).toString();
    }

    private static String msg(String conv, long seq, Group grp, long at) {
        return new EventRecord(conv, seq, "msg", mid(conv, seq), Group.user(grp.sender), Group.device(grp.sender),
                "cm-" + seq, BODY, at).toJson();
    }

    // ------------------------------------------------------------------ output

    private void printTable(List<Result> rs) {
        System.out.println();
        System.out.println("# cpu per unit (thread CPU): events to delivery / sweeper, per push (a device entry of the"
                + " delivery's output; the same event CPU divided by the pushes it made, delivery / sweeper), per cursor record"
                + " (sweeper), per re-sent registration (delivery / sweeper), per sweep tick with every cursor at the head and with"
                + " throttled acks (lag), hints per device-minute in the lagging variant, share of them needless");
        StringBuilder h = new StringBuilder(String.format("%8s %6s %6s", "members", "online", "events"));
        for (Col c : COLS) h.append(' ').append(String.format("%" + width(c) + "s", c.head()));
        System.out.println(h);
        for (Result r : rs) {
            StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%8d %6d %6d", r.members(), r.online(), r.events()));
            for (Col c : COLS) b.append(' ').append(String.format(Locale.ROOT, c.fmt(), c.get().applyAsDouble(r)));
            System.out.println(b);
        }
        if (rs.size() < 2) return;
        Result base = rs.get(0);
        System.out.println();
        System.out.printf("# ratio to the smallest size (members %d)%n", base.members());
        System.out.println(h);
        for (Result r : rs) {
            StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%8s %6s %6s",
                    ratio(r.members(), base.members()), ratio(r.online(), base.online()), ratio(r.events(), base.events())));
            for (Col c : COLS) {
                b.append(' ').append(String.format("%" + width(c) + "s",
                        ratio(c.get().applyAsDouble(r), c.get().applyAsDouble(base))));
            }
            System.out.println(b);
        }
    }

    private static int width(Col c) {
        return Integer.parseInt(c.fmt().replaceAll("[^0-9.]", "").split("\\.")[0]);
    }

    private static String ratio(double v, double base) {
        if (Double.isNaN(v) || Double.isNaN(base)) return "n/a";
        if (base == 0) return v == 0 ? "-" : "inf";
        return String.format(Locale.ROOT, "x%.2f", v / base);
    }

    /** Per-unit CPU (µs; ticks in ms) against members, one series per figure that is not a count. */
    private void writeChart(List<Result> rs) throws IOException {
        org.knowm.xchart.XYChart c = Charts.against(chartTitle, "members of the group (25 % online, at most 2,000)",
                "CPU per unit (µs; sweep tick: ms)", 900, 560);
        c.getStyler().setXAxisLogarithmic(true);
        c.getStyler().setYAxisLogarithmic(true);
        double[] x = rs.stream().mapToDouble(Result::members).toArray();
        for (Col col : COLS) {
            if (col.head().startsWith("hints") || col.head().startsWith("needless") || col.head().equals("tick ms")) continue;
            double[] y = rs.stream().mapToDouble(r -> Math.max(0.01, col.get().applyAsDouble(r))).toArray();
            c.addSeries(col.head(), x, y);
        }
        Charts.write(chart, null, c);
    }
}
