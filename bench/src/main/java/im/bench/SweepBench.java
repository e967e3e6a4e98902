package im.bench;

import static im.bench.BenchEnv.deleteTree;
import static im.bench.BenchEnv.loadAvg;
import static im.bench.BenchEnv.printServer;

import im.embedded.EmbeddedPg;
import im.infra.db.Database;
import im.infra.kafka.TopicNames;
import im.streams.ConvLogStore;
import im.sweeper.SweepStats;
import im.sweeper.SweeperTopology;
import im.topics.Interest;
import im.topics.PairKey;
import im.topics.Period;
import im.topics.RouteJson;
import java.io.IOException;
import java.io.StringReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.Callable;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Sweep cost as the work grows (issue 4): one tick of the Streams sweeper ({@link SweeperTopology},
 * real topology and RocksDB stores, in a {@link TopologyTestDriver} with a mocked wall clock) beside
 * one tick of the seed's sweep (for each online device, the per-device query of
 * {@code ConversationReader}: its user's conversations with head and this device's cursor, and a
 * hint where delivered &lt; head) against PostgreSQL holding the same pairs, in the same run.
 *
 * <p>Data shape, per size N (online (conversation, device) pairs): {@code D = N / k} devices, one
 * per user ({@code u<i>} / {@code d<i>}), every device online in all of its user's {@code k}
 * conversations. Conversations ({@code c<j>}) have 2–8 members (sizes cycle 2,3,…,8; mean 5), so
 * there are about N / 5 of them: the members are drawn round by round, each round a random
 * permutation of all users cut into groups, so each user joins {@code k} distinct conversations.
 * Heads are 10–16; a non-lagging pair's cursor is the head, a lagging pair's is 1–3 below. The
 * lagging pairs are a random prefix of a fixed random order of the pairs: for the fractions run
 * in decreasing order, the step from one fraction to the next is the catch-up (cursor raised to
 * the head) of the pairs in between, applied in both systems.
 *
 * <p>The Streams side since the 2026-12-05 redesign (8f4afc4, 0d13e74): loading writes no pair
 * into the {@code lagging} index (the pairs that register behind the head wait in the in-memory
 * {@code fresh} store); the driver's first tick one due interval after its start is the task's
 * one pass over all its online pairs, measured and printed apart ("first pass after a start"),
 * after which the index holds exactly the lagging pairs, hinted. The measured steady ticks then
 * walk only that index (back-off 0: every tick re-hints every lagging pair, the worst case) and
 * visit no online pair outside it, since no event arrives; the catch-up between fractions is a
 * repair per pair, which leaves the index.
 */
@Command(name = "sweep-bench", mixinStandardHelpOptions = true,
        description = "one sweep tick of the Streams sweeper vs the seed's per-device DB scan, same data, same run")
public final class SweepBench implements Callable<Integer> {
    private static final TopicNames TOPICS = new TopicNames("sb.");
    private static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");
    private static final int GATEWAYS = 4;
    private static final long GEN = 1;
    private static final long SEED = 42;

    /** ConversationReader.CONVERSATIONS, verbatim: the seed's per-device read. */
    static final String SEED_QUERY =
            "SELECT c.conv_id, c.head_seq, COALESCE(dc.delivered_seq, 0), m.from_seq"
            + " FROM memberships m JOIN conversations c ON c.conv_id = m.conv_id"
            + " LEFT JOIN device_cursors dc ON dc.device_id = ? AND dc.conv_id = m.conv_id"
            + " WHERE m.user_id = ? AND m.to_seq IS NULL ORDER BY c.conv_id";

    @Option(names = "--sizes", split = ",", description = "online pairs N, default ${DEFAULT-VALUE}")
    List<Integer> sizes = List.of(10_000, 100_000, 1_000_000);
    @Option(names = "--fractions", split = ",", description = "lagging fractions, default ${DEFAULT-VALUE}")
    List<Double> fractions = List.of(0.01, 0.001);
    @Option(names = "--k", description = "conversations per device (all online), default ${DEFAULT-VALUE}")
    int k = 10;
    @Option(names = "--db-max", description = "largest N for which the seed's side runs too, default ${DEFAULT-VALUE}")
    int dbMax = 1_000_000;
    @Option(names = "--sweep-ms", description = "sweep interval, default ${DEFAULT-VALUE}")
    long sweepMs = 1000;
    @Option(names = "--repeats", description = "measured Streams ticks per (N, f), median reported; default ${DEFAULT-VALUE}")
    int repeats = 5;
    @Option(names = "--seed-repeats", description = "measured seed ticks per (N, f), median reported; default ${DEFAULT-VALUE}")
    int seedRepeats = 1;
    @Option(names = "--pipe-max", description = "largest N loaded through the topology's input topics; larger N are"
            + " prefilled straight into the same stores (content verified equal at the piped sizes); default ${DEFAULT-VALUE}")
    int pipeMax = 10_000;
    @Option(names = "--work-dir", description = "parent of the temp dir (state dirs, database); default java.io.tmpdir")
    Path workDir;

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final List<Row> rows = new ArrayList<>();
    private final List<FirstPass> firstPasses = new ArrayList<>();
    private boolean seedWarmed;

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "bench-logback.xml");
        }
        System.exit(new CommandLine(new SweepBench()).execute(args));
    }

    /**
     * One measured steady tick (median of the repeats) of each side. Seed fields are NaN / -1 when
     * not run. {@code visited}: the pairs the Streams tick looked at, its index entries plus the
     * online pairs it visited outside the index ({@code SweepStats.pairsVisited}, 0 at a steady tick).
     */
    record Row(int n, double f, int lagging, long visited, Tick streams, Tick seed) {}

    /** The Streams side's first tick after the driver started: its one pass over all online pairs. */
    record FirstPass(int n, double f, int lagging, long visited, boolean piped, Tick tick) {}

    /** CPU and wall ms of a tick and what it did. */
    record Tick(double cpuMs, double wallMs, long hints, long hintRecords, long queries, long rows,
                long tupReturned, long tupFetched, long blksHit, long blksRead, double dbCpuMs) {
        static Tick none() {
            return new Tick(Double.NaN, Double.NaN, -1, -1, -1, -1, -1, -1, -1, -1, Double.NaN);
        }

        boolean ran() {
            return !Double.isNaN(cpuMs);
        }
    }

    @Override
    public Integer call() throws Exception {
        if (k < 1 || sizes.stream().anyMatch(n -> n < 2 * k || n % k != 0) || repeats < 1 || seedRepeats < 1) {
            System.err.println("each size must be a multiple of k (>= 2k); repeats >= 1");
            return 2;
        }
        if (fractions.stream().anyMatch(f -> f < 0 || f > 1)) {
            System.err.println("fractions must be in [0, 1]");
            return 2;
        }
        List<Double> fs = new ArrayList<>(fractions);
        fs.sort(Comparator.reverseOrder());   // catch-up only moves cursors forward
        if (!threads.isCurrentThreadCpuTimeSupported()) {
            System.err.println("thread CPU time not supported by this JVM");
            return 2;
        }
        threads.setThreadCpuTimeEnabled(true);
        Path tmp = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir,
                "sweep-bench-");
        System.out.printf("# sweep bench: sizes=%s fractions=%s k=%d sweep=%d ms, Streams ticks per point %d (median),"
                        + " seed ticks per point %d (median), seed side up to N=%d%n",
                sizes, fs, k, sweepMs, repeats, seedRepeats, dbMax);
        System.out.printf("# machine: nproc=%d, java %s (%s), %s %s, max heap %d MB, load avg at start %s%n",
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), System.getProperty("os.name"), System.getProperty("os.version"),
                Runtime.getRuntime().maxMemory() >> 20, loadAvg());
        long runStart = System.nanoTime();
        EmbeddedPg pg = null;
        try {
            // Warm-up, not reported: JIT for both sides' code paths.
            Shape warm = Shape.build(200 * k, k, new Random(SEED + 1));
            try (StreamsSide s = new StreamsSide(warm, tmp.resolve("warmup"))) {
                s.load(warm.lagCount(0.1), false);
                for (int i = 0; i < 5; i++) s.tick();
            }
            boolean anyDb = sizes.stream().anyMatch(n -> n <= dbMax);
            if (anyDb) {
                pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false);
                try (Connection c = java.sql.DriverManager.getConnection(pg.jdbcUrl("postgres"), EmbeddedPg.USER, EmbeddedPg.PASSWORD)) {
                    printServer(c, List.of("server_version", "shared_buffers", "work_mem", "jit"));
                }
            }
            for (int n : sizes) {
                Shape shape = Shape.build(n, k, new Random(SEED));
                System.out.printf("%n# N=%d: %d devices (one per user) x k=%d conversations each, %d conversations of"
                                + " 2-8 members (mean %.2f), heads 10-16; load avg %s%n",
                        n, shape.devices, k, shape.convs, (double) n / shape.convs, loadAvg());
                int[] lag = fs.stream().mapToInt(shape::lagCount).toArray();
                List<Tick[]> streamsTicks = new ArrayList<>();
                List<Long> visited = new ArrayList<>();
                try (StreamsSide s = new StreamsSide(shape, tmp.resolve("streams-" + n))) {
                    if (n <= pipeMax) {
                        s.load(lag[0], true);
                        s.verifyStores(lag[0]);
                    } else {
                        s.prefill(lag[0]);
                    }
                    Tick first = s.firstPass(lag[0]);
                    firstPasses.add(new FirstPass(n, fs.get(0), lag[0], s.lastVisited, n <= pipeMax, first));
                    System.out.printf(Locale.ROOT, "# streams N=%d f=%s lagging=%d: first pass after a start (%s): cpu ms %.2f,"
                                    + " wall ms %.2f, online pairs visited %d, hints %d in %d records; idle commit cpu ms %.2f;"
                                    + " then the lagging index holds exactly the %d lagging pairs, hinted; load avg %s%n",
                            n, pct(fs.get(0)), lag[0], n <= pipeMax ? "piped: found in fresh" : "prefilled: found by the pass",
                            first.cpuMs(), first.wallMs(), s.lastVisited, first.hints(), first.hintRecords(),
                            s.idle.get(0).cpuMs(), lag[0], loadAvg());
                    s.idle.clear();
                    for (int i = 0; i < fs.size(); i++) {
                        if (i > 0) s.catchUp(lag[i], lag[i - 1]);
                        long v = s.laggingEntries();
                        if (v != lag[i]) throw new IllegalStateException("lagging store holds " + v + ", expected " + lag[i]);
                        Tick[] ticks = new Tick[repeats];
                        for (int r = 0; r < repeats; r++) {
                            ticks[r] = s.tick();
                            if (ticks[r].hints() != lag[i]) {
                                throw new IllegalStateException("Streams tick hinted " + ticks[r].hints() + " devices, expected " + lag[i]);
                            }
                            if (s.lastVisited != 0) {
                                throw new IllegalStateException("Streams steady tick visited " + s.lastVisited
                                        + " online pairs outside the index, expected 0 (no event since the first pass)");
                            }
                        }
                        streamsTicks.add(ticks);
                        visited.add(v);   // index entries; + 0 online pairs outside it (checked above)
                        System.out.printf(Locale.ROOT, "# streams N=%d f=%s lagging=%d: tick cpu ms %s, wall ms %s, hints %d"
                                        + " in %d records; idle commit (no punctuation) cpu ms %s wall ms %s; load avg %s%n",
                                n, pct(fs.get(i)), lag[i], list(ticks, true), list(ticks, false), ticks[0].hints(),
                                ticks[0].hintRecords(), list(s.idle.toArray(new Tick[0]), true),
                                list(s.idle.toArray(new Tick[0]), false), loadAvg());
                        s.idle.clear();
                    }
                }
                List<Tick> seedTicks = new ArrayList<>();
                if (n <= dbMax) {
                    String dbName = "sweep_" + n;
                    pg.createDatabase(dbName);
                    try (Database db = Database.open(pg.dbConfig(dbName, 2), "sweep-bench")) {
                        Database.migrate(db.dataSource());
                        SeedSide seed = new SeedSide(db, shape);
                        seed.load(lag[0]);
                        seed.explain();
                        if (!seedWarmed) {   // JIT for the JDBC path: one tick, not reported, on the first size only
                            seed.tick();
                            seedWarmed = true;
                        }
                        for (int i = 0; i < fs.size(); i++) {
                            if (i > 0) seed.catchUp(lag[i], lag[i - 1]);
                            Tick[] ticks = new Tick[seedRepeats];
                            for (int r = 0; r < seedRepeats; r++) {
                                ticks[r] = seed.tick();
                                if (ticks[r].hints() != lag[i]) {
                                    throw new IllegalStateException("seed tick found " + ticks[r].hints() + " lagging pairs, expected " + lag[i]);
                                }
                                if (ticks[r].rows() != n) throw new IllegalStateException("seed tick read " + ticks[r].rows() + " rows, expected " + n);
                            }
                            seedTicks.add(median(ticks));
                            System.out.printf(Locale.ROOT, "# seed    N=%d f=%s lagging=%d: tick cpu ms %s, wall ms %s, %d queries,"
                                            + " %d rows; pg_stat_database tup_returned %d tup_fetched %d blks_hit %d blks_read %d;"
                                            + " PostgreSQL backend CPU %.0f ms; load avg %s%n",
                                    n, pct(fs.get(i)), lag[i], list(ticks, true), list(ticks, false), ticks[0].queries(),
                                    ticks[0].rows(), ticks[0].tupReturned(), ticks[0].tupFetched(), ticks[0].blksHit(),
                                    ticks[0].blksRead(), ticks[0].dbCpuMs(), loadAvg());
                        }
                    }
                    try (Connection c = java.sql.DriverManager.getConnection(pg.jdbcUrl("postgres"), EmbeddedPg.USER, EmbeddedPg.PASSWORD);
                         Statement st = c.createStatement()) {
                        st.execute("DROP DATABASE " + dbName);
                    }
                } else {
                    System.out.printf("# seed    N=%d: not run (N > --db-max %d)%n", n, dbMax);
                }
                for (int i = 0; i < fs.size(); i++) {
                    rows.add(new Row(n, fs.get(i), lag[i], visited.get(i), median(streamsTicks.get(i)),
                            seedTicks.isEmpty() ? Tick.none() : seedTicks.get(i)));
                }
            }
        } finally {
            if (pg != null) pg.close();
            deleteTree(tmp);
        }
        System.out.printf("%n# run took %.0f s; load avg at end %s%n", (System.nanoTime() - runStart) / 1e9, loadAvg());
        printTable(fs);
        return 0;
    }

    // ------------------------------------------------------------------ data shape

    /** N pairs: pair p is (conversation convOf[p], device devOf[p]); lagOrder[0..L) are the lagging ones. */
    static final class Shape {
        final int n;
        final int devices;
        final int convs;
        final int[] convOf;
        final int[] devOf;
        final int[] convSize;
        final int[] lagOrder;

        private Shape(int n, int devices, int convs, int[] convOf, int[] devOf, int[] convSize, int[] lagOrder) {
            this.n = n;
            this.devices = devices;
            this.convs = convs;
            this.convOf = convOf;
            this.devOf = devOf;
            this.convSize = convSize;
            this.lagOrder = lagOrder;
        }

        static Shape build(int n, int k, Random rnd) {
            int d = n / k;
            int[] convOf = new int[n];
            int[] devOf = new int[n];
            int[] sizes = new int[n / 2 + 1];
            int convs = 0;
            int p = 0;
            int cycle = 0;
            int[] perm = new int[d];
            for (int i = 0; i < d; i++) perm[i] = i;
            for (int round = 0; round < k; round++) {
                shuffle(perm, rnd);
                int at = 0;
                while (at < d) {
                    int rem = d - at;
                    int s = 2 + (cycle++ % 7);          // 2..8
                    if (rem - s == 1) s = s < 8 ? s + 1 : s - 1;   // never leave a single member behind
                    if (s > rem) s = rem;
                    for (int m = 0; m < s; m++) {
                        convOf[p] = convs;
                        devOf[p] = perm[at + m];
                        p++;
                    }
                    sizes[convs++] = s;
                    at += s;
                }
            }
            int[] order = new int[n];
            for (int i = 0; i < n; i++) order[i] = i;
            shuffle(order, rnd);
            return new Shape(n, d, convs, convOf, devOf, Arrays.copyOf(sizes, convs), order);
        }

        private static void shuffle(int[] a, Random rnd) {
            for (int i = a.length - 1; i > 0; i--) {
                int j = rnd.nextInt(i + 1);
                int t = a[i];
                a[i] = a[j];
                a[j] = t;
            }
        }

        int lagCount(double f) {
            return (int) Math.round(f * n);
        }

        static long head(int conv) {
            return 10 + conv % 7;
        }

        /** The cursor of a lagging pair: 1-3 below the head. */
        static long behind(int pair, int conv) {
            return head(conv) - 1 - pair % 3;
        }

        /** Lagging flags for the first {@code lagging} pairs of the lag order. */
        boolean[] laggingSet(int lagging) {
            boolean[] b = new boolean[n];
            for (int i = 0; i < lagging; i++) b[lagOrder[i]] = true;
            return b;
        }

        static String conv(int c) {
            return "c" + c;
        }

        static String device(int d) {
            return "d" + d;
        }

        static String user(int d) {
            return "u" + d;
        }

        static String gateway(int d) {
            return "gw-" + (d % GATEWAYS);
        }
    }

    // ------------------------------------------------------------------ Streams side

    /** The real sweeper topology in a TopologyTestDriver, RocksDB stores under {@code stateDir}. */
    final class StreamsSide implements AutoCloseable {
        private final Shape shape;
        private final TopologyTestDriver driver;
        private final SweepStats stats = new SweepStats();
        /** Online pairs outside the index that the last {@link #tick} visited ({@link SweepStats#pairsVisited} delta). */
        long lastVisited;
        private final TestInputTopic<String, String> events;
        private final TestInputTopic<String, String> cursors;
        private final TestInputTopic<String, String> interest;
        private final List<TestOutputTopic<String, String>> channels = new ArrayList<>();
        private long now = T0.toEpochMilli();

        StreamsSide(Shape shape, Path stateDir) throws IOException {
            this.shape = shape;
            Files.createDirectories(stateDir);
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, "sweep-bench");
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
            p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");   // as the Sweeper runs it
            // back-off 0: a pair still lagging at the next tick is hinted again, so every tick does the full work
            // (with back-off = sweep, the back-off's doubling within a spell would skip ticks from the third hint on).
            driver = new TopologyTestDriver(SweeperTopology.build(TOPICS, Duration.ofMillis(sweepMs),
                    Duration.ZERO, Duration.ofDays(1), Duration.ofDays(1), stats), p, T0);
            StringSerializer ser = new StringSerializer();
            StringDeserializer de = new StringDeserializer();
            events = driver.createInputTopic(TOPICS.events(), ser, ser);
            cursors = driver.createInputTopic(TOPICS.cursors(), ser, ser);
            interest = driver.createInputTopic(TOPICS.interest(), ser, ser);
            TestInputTopic<String, String> gws = driver.createInputTopic(TOPICS.gateways(), ser, ser);
            for (int g = 0; g < GATEWAYS; g++) {
                String gw = "gw-" + g;
                gws.pipeInput(gw, new im.topics.Heartbeat(gw, GEN, now).toJson());
                channels.add(driver.createOutputTopic(TOPICS.channel(gw), de, de));
            }
        }

        /** Heads (one event per conversation, at its head), cursors, then interest (online) records. */
        void load(int lagging, boolean print) {
            boolean[] lags = shape.laggingSet(lagging);
            Phase ev = timed(shape.convs, (from, to) -> {
                for (int c = from; c < to; c++) {
                    List<String> members = membersOf(c);
                    for (int i = 0; i < members.size(); i++) events.pipeInput(Shape.conv(c), join(c, i + 1, members.get(i)));
                    events.pipeInput(Shape.conv(c), event(c));
                }
            });
            Phase cu = timed(shape.n, (from, to) -> {
                for (int p = from; p < to; p++) {
                    int c = shape.convOf[p];
                    cursors.pipeInput(Shape.conv(c), cursor(c, shape.devOf[p], lags[p] ? Shape.behind(p, c) : Shape.head(c)));
                }
            });
            Phase in = timed(shape.n, (from, to) -> {
                for (int p = from; p < to; p++) {
                    int c = shape.convOf[p];
                    int d = shape.devOf[p];
                    interest.pipeInput(Shape.conv(c), new im.topics.InterestRecord(Shape.conv(c), Shape.device(d), online(d)).toJson());
                }
            });
            if (print) {
                System.out.printf(Locale.ROOT, "# streams load (paid on traffic, not per tick; per input record, incl."
                                + " building the JSON and the test driver's per-record commit):"
                                + " events %d x %.1f us cpu / %.1f us wall; cursors %d x %.1f / %.1f us;"
                                + " interest %d x %.1f / %.1f us%n",
                        shape.convs, ev.cpuUsPer(), ev.wallUsPer(), shape.n, cu.cpuUsPer(), cu.wallUsPer(),
                        shape.n, in.cpuUsPer(), in.wallUsPer());
            }
        }

        /**
         * The persistent stores as {@link #load} leaves them, written straight into them (their
         * changelogs too) instead of through the input topics: the test driver commits and flushes
         * RocksDB after every input record, which makes piping millions of records take far longer
         * than a run may. Values in the formats of {@code PairState}; {@link #verifyStores} checks,
         * at the piped sizes, that the topology produced exactly this. As after loading, the
         * {@code lagging} index is empty (no pair was hinted yet); unlike it, nothing is in the
         * in-memory {@code fresh} store (a restarted task has lost it), so here the start's first
         * pass, not the fresh check, finds the lagging pairs: the same hints and the same index
         * entries either way ({@link #firstPass}).
         */
        private java.util.Map<Integer, List<String>> members;

        void prefill(int lagging) {
            long t0 = System.nanoTime();
            boolean[] lags = shape.laggingSet(lagging);
            KeyValueStore<String, Long> heads = driver.getKeyValueStore(ConvLogStore.HEADS);
            KeyValueStore<String, String> periods = driver.getKeyValueStore(ConvLogStore.PERIODS);
            KeyValueStore<String, String> cur = driver.getKeyValueStore(SweeperTopology.CURSORS_STORE);
            KeyValueStore<String, String> onl = driver.getKeyValueStore(SweeperTopology.ONLINE_STORE);
            for (int c = 0; c < shape.convs; c++) {
                heads.put(Shape.conv(c), (long) Shape.head(c));
                expectedPeriods(c).forEach(periods::put);
                if (c % 50_000 == 49_999) flushCaptured();
            }
            for (int p = 0; p < shape.n; p++) {
                String key = pairKey(p);
                cur.put(key, expectedCursor(p, lags));
                onl.put(key, expectedOnline(p));
                if (p % 50_000 == 49_999) flushCaptured();
            }
            flushCaptured();
            System.out.printf(Locale.ROOT, "# streams stores prefilled directly (N > --pipe-max %d): %d heads, %d cursors,"
                            + " %d online (%d of them behind the head), 0 lagging, 0 fresh (a restarted task) in %.1f s%n",
                    pipeMax, shape.convs, shape.n, shape.n, lagging, (System.nanoTime() - t0) / 1e9);
        }

        /**
         * Every persistent store holds exactly what {@link #prefill} writes (an empty {@code lagging}
         * index: an event or a registration writes no pair there), and the in-memory
         * {@code fresh} store exactly the pairs that registered behind the head, since their
         * registration (the driver's clock stood at T0 during the load).
         */
        void verifyStores(int lagging) {
            boolean[] lags = shape.laggingSet(lagging);
            KeyValueStore<String, Long> heads = driver.getKeyValueStore(ConvLogStore.HEADS);
            KeyValueStore<String, String> periods = driver.getKeyValueStore(ConvLogStore.PERIODS);
            long periodCount = 0;
            for (int c = 0; c < shape.convs; c++) {
                check((long) Shape.head(c), heads.get(Shape.conv(c)), "head of conv " + c);
                for (java.util.Map.Entry<String, String> e : expectedPeriods(c).entrySet()) {
                    check(e.getValue(), periods.get(e.getKey()), "period " + e.getKey());
                    periodCount++;
                }
            }
            check(periodCount, count(periods), "period entries");
            KeyValueStore<String, String> cur = driver.getKeyValueStore(SweeperTopology.CURSORS_STORE);
            KeyValueStore<String, String> onl = driver.getKeyValueStore(SweeperTopology.ONLINE_STORE);
            KeyValueStore<String, String> lag = driver.getKeyValueStore(SweeperTopology.LAGGING_STORE);
            KeyValueStore<String, Long> fresh = driver.getKeyValueStore(SweeperTopology.FRESH_STORE);
            for (int p = 0; p < shape.n; p++) {
                String key = pairKey(p);
                check(expectedCursor(p, lags), cur.get(key), "cursor of pair " + p);
                check(expectedOnline(p), onl.get(key), "online of pair " + p);
                check(null, lag.get(key), "lagging of pair " + p);
                check(lags[p] ? T0.toEpochMilli() : null, fresh.get(key), "fresh of pair " + p);
            }
            check((long) shape.convs, count(heads), "heads entries");
            check((long) shape.n, count(cur), "cursors entries");
            check((long) shape.n, count(onl), "online entries");
            check(0L, count(lag), "lagging entries");
            check((long) lagging, count(fresh), "fresh entries");
            System.out.println("# streams stores after loading through the topology: persistent ones equal, entry by entry,"
                    + " to what --pipe-max prefills for larger N (lagging index empty); fresh (in memory) holds the "
                    + lagging + " pairs behind the head");
        }

        private static void check(Object expected, Object actual, String what) {
            if (!java.util.Objects.equals(expected, actual)) {
                throw new IllegalStateException(what + ": expected " + expected + ", store holds " + actual);
            }
        }

        private static <V> long count(KeyValueStore<String, V> store) {
            long n = 0;
            try (KeyValueIterator<String, V> it = store.all()) {
                while (it.hasNext()) {
                    it.next();
                    n++;
                }
            }
            return n;
        }

        private String pairKey(int p) {
            return PairKey.of(Shape.conv(shape.convOf[p]), Shape.device(shape.devOf[p]));
        }

        private String expectedCursor(int p, boolean[] lags) {
            int c = shape.convOf[p];
            return RouteJson.JSON.createObjectNode().put("epoch", 1)
                    .put("delivered", lags[p] ? Shape.behind(p, c) : Shape.head(c)).toString();
        }

        private String expectedOnline(int p) {
            return online(shape.devOf[p]).toStoreJson();
        }

        private Interest online(int d) {
            return new Interest(Shape.user(d), Shape.gateway(d), GEN, 1, true, T0.toEpochMilli());
        }

        /** The users of conversation c's pairs, in pair order, each once: they joined at seqs 1..m. */
        private List<String> membersOf(int c) {
            if (members == null) {
                members = new java.util.HashMap<>();
                for (int p = 0; p < shape.n; p++) {
                    List<String> l = members.computeIfAbsent(shape.convOf[p], k -> new ArrayList<>());
                    String u = Shape.user(shape.devOf[p]);
                    if (!l.contains(u)) l.add(u);
                }
            }
            return members.getOrDefault(c, List.of());
        }

        /** Conversation c's period entries: its members joined at seqs 1..m. */
        private java.util.Map<String, String> expectedPeriods(int c) {
            java.util.Map<String, String> m = new java.util.LinkedHashMap<>();
            List<String> users = membersOf(c);
            for (int i = 0; i < users.size(); i++) m.put(PairKey.of(Shape.conv(c), users.get(i)), new Period(i + 1, Period.OPEN).encode());
            return m;
        }

        private String join(int c, long seq, String user) {
            return new im.topics.EventRecord(Shape.conv(c), seq, "join", "m-" + c + "-" + seq, user, null, null, "", 0).toJson();
        }

        /** The index entry of a lagging pair hinted once, at {@code hintedAt}, in a spell from T0 (its registration). */
        private static String expectedLag(int c, long hintedAt) {
            return RouteJson.JSON.createObjectNode().put("mark", (long) Shape.head(c)).put("since", T0.toEpochMilli())
                    .put("lastHint", hintedAt).put("hints", 1).toString();
        }

        /**
         * The start's first pass (the first tick at least one due interval after the driver
         * started): it visits every online pair and hints each lagging one, found in {@code fresh}
         * (piped load) or by the pass (prefill). After it the index holds exactly the lagging
         * pairs, each hinted once, the same entries either way.
         */
        Tick firstPass(int lagging) {
            Tick t = tick();
            if (lastVisited != shape.n) {
                throw new IllegalStateException("first tick visited " + lastVisited + " online pairs, expected all " + shape.n);
            }
            if (t.hints() != lagging) throw new IllegalStateException("first pass hinted " + t.hints() + ", expected " + lagging);
            boolean[] lags = shape.laggingSet(lagging);
            KeyValueStore<String, String> lag = driver.getKeyValueStore(SweeperTopology.LAGGING_STORE);
            KeyValueStore<String, Long> fresh = driver.getKeyValueStore(SweeperTopology.FRESH_STORE);
            for (int p = 0; p < shape.n; p++) {
                check(lags[p] ? expectedLag(shape.convOf[p], now) : null, lag.get(pairKey(p)), "lagging of pair " + p + " after the first pass");
            }
            check((long) lagging, count(lag), "lagging entries after the first pass");
            check(0L, count(fresh), "fresh entries after the first pass");
            return t;
        }

        /** Lets the driver commit and hand over what the stores' changelogs produced, then drops it. */
        private void flushCaptured() {
            driver.advanceWallClockTime(Duration.ZERO);
            drainChangelogs();
        }

        /** The pairs lagOrder[to..from) ack up to the head: hinted pairs that catch up, repairs that leave the index. */
        void catchUp(int to, int from) {
            long repairsBefore = stats.repairs();
            for (int i = to; i < from; i++) {
                int p = shape.lagOrder[i];
                int c = shape.convOf[p];
                cursors.pipeInput(Shape.conv(c), cursor(c, shape.devOf[p], Shape.head(c)));
            }
            drainChangelogs();
            if (stats.repairs() - repairsBefore != from - to) {
                throw new IllegalStateException("catch-up of " + (from - to) + " hinted pairs counted "
                        + (stats.repairs() - repairsBefore) + " repairs");
            }
        }

        long laggingEntries() {
            KeyValueStore<String, String> lagging = driver.getKeyValueStore(SweeperTopology.LAGGING_STORE);
            long count = 0;
            try (KeyValueIterator<String, String> it = lagging.all()) {
                while (it.hasNext()) {
                    it.next();
                    count++;
                }
            }
            return count;
        }

        /**
         * One tick: the clock first moves to 1 ms before the next punctuation (the driver commits
         * and flushes what came before: not part of the tick), then the measured last ms fires it.
         */
        final List<Tick> idle = new ArrayList<>();

        Tick tick() {
            long next = T0.toEpochMilli() + ((now - T0.toEpochMilli()) / sweepMs + 1) * sweepMs;
            advance(next - 2 - now);
            drainChangelogs();
            for (TestOutputTopic<String, String> ch : channels) ch.readRecordsToList();
            // Baseline: the same driver step (commit, checkpoint) 1 ms before the tick, with no punctuation due.
            long icpu0 = threads.getCurrentThreadCpuTime();
            long iwall0 = System.nanoTime();
            advance(1);
            idle.add(new Tick((threads.getCurrentThreadCpuTime() - icpu0) / 1e6, (System.nanoTime() - iwall0) / 1e6,
                    0, 0, 0, 0, 0, 0, 0, 0, 0));
            long hintsBefore = stats.hints();
            long visitedBefore = stats.pairsVisited();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long wall0 = System.nanoTime();
            advance(1);
            long wall = System.nanoTime() - wall0;
            long cpu = threads.getCurrentThreadCpuTime() - cpu0;
            long records = 0;
            for (TestOutputTopic<String, String> ch : channels) records += ch.getQueueSize();
            drainChangelogs();
            lastVisited = stats.pairsVisited() - visitedBefore;
            return new Tick(cpu / 1e6, wall / 1e6, stats.hints() - hintsBefore, records, 0, 0, 0, 0, 0, 0, 0);
        }

        private void advance(long ms) {
            now += ms;
            driver.advanceWallClockTime(Duration.ofMillis(ms));
        }

        private void drainChangelogs() {
            ByteArrayDeserializer b = new ByteArrayDeserializer();
            for (String t : driver.producedTopicNames()) {
                if (!t.endsWith("-changelog")) continue;
                TestOutputTopic<byte[], byte[]> out = driver.createOutputTopic(t, b, b);
                while (!out.isEmpty()) out.readRecord();
            }
        }

        interface Batch {
            void run(int from, int to);
        }

        record Phase(long count, long cpuNanos, long wallNanos) {
            double cpuUsPer() {
                return count == 0 ? 0 : cpuNanos / 1e3 / count;
            }

            double wallUsPer() {
                return count == 0 ? 0 : wallNanos / 1e3 / count;
            }
        }

        /** Runs the batch in slices, draining the captured changelogs between them (outside the timing). */
        private Phase timed(int count, Batch batch) {
            long cpu = 0;
            long wall = 0;
            int slice = 50_000;
            for (int from = 0; from < count; from += slice) {
                int to = Math.min(count, from + slice);
                long c0 = threads.getCurrentThreadCpuTime();
                long w0 = System.nanoTime();
                batch.run(from, to);
                wall += System.nanoTime() - w0;
                cpu += threads.getCurrentThreadCpuTime() - c0;
                drainChangelogs();
            }
            return new Phase(count, cpu, wall);
        }

        private String event(int c) {
            long seq = Shape.head(c);
            return new im.topics.EventRecord(Shape.conv(c), seq, "msg", "m-" + c + "-" + seq, "u-x", "dx", "x" + seq, "b", 0).toJson();
        }

        private String cursor(int c, int d, long delivered) {
            return new im.topics.CursorRecord.Update(Shape.conv(c), Shape.device(d), 1, delivered, now).toJson();
        }

        @Override
        public void close() {
            driver.close();
        }
    }

    // ------------------------------------------------------------------ seed side

    /** The seed's tables in PostgreSQL with the same pairs, and its sweep. */
    final class SeedSide {
        private final Database db;
        private final Shape shape;

        SeedSide(Database db, Shape shape) {
            this.db = db;
            this.shape = shape;
        }

        void load(int lagging) throws SQLException, IOException {
            long t0 = System.nanoTime();
            boolean[] lags = shape.laggingSet(lagging);
            try (Connection c = db.connection(); Statement st = c.createStatement()) {
                st.execute("SET session_replication_role = replica");   // bulk load: skip the FK triggers
                st.execute("INSERT INTO users (user_id) SELECT 'u' || i FROM generate_series(0, " + (shape.devices - 1) + ") i");
                st.execute("INSERT INTO devices (device_id, user_id, token_hash) SELECT 'd' || i, 'u' || i,"
                        + " decode(md5('d' || i), 'hex') FROM generate_series(0, " + (shape.devices - 1) + ") i");
                st.execute("INSERT INTO conversations (conv_id, kind, head_seq) SELECT 'c' || j, 'group', 10 + j % 7"
                        + " FROM generate_series(0, " + (shape.convs - 1) + ") j");
                CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
                copyIn(copy, "COPY memberships (conv_id, user_id, from_seq) FROM STDIN (FORMAT csv)",
                        p -> Shape.conv(shape.convOf[p]) + "," + Shape.user(shape.devOf[p]) + ",1\n");
                copyIn(copy, "COPY device_cursors (device_id, conv_id, install_epoch, delivered_seq) FROM STDIN (FORMAT csv)",
                        p -> {
                            int cv = shape.convOf[p];
                            return Shape.device(shape.devOf[p]) + "," + Shape.conv(cv) + ",1,"
                                    + (lags[p] ? Shape.behind(p, cv) : Shape.head(cv)) + "\n";
                        });
                st.execute("SET session_replication_role = origin");
                for (String t : List.of("users", "devices", "conversations", "memberships", "device_cursors")) {
                    st.execute("ALTER TABLE " + t + " SET (autovacuum_enabled = false)");   // nothing else reads during a tick
                }
                st.execute("VACUUM ANALYZE");
            }
            System.out.printf(Locale.ROOT, "# seed load: %d users, %d devices, %d conversations, %d memberships, %d cursors"
                            + " (COPY / INSERT ... generate_series, then VACUUM ANALYZE) in %.1f s%n",
                    shape.devices, shape.devices, shape.convs, shape.n, shape.n, (System.nanoTime() - t0) / 1e9);
        }

        /** The plan of the per-device query, prepared and run 6 times first (as pgjdbc's server-side prepare does). */
        void explain() throws SQLException {
            try (Connection c = db.connection(); Statement st = c.createStatement()) {
                st.execute("PREPARE q(text, text) AS " + SEED_QUERY.replaceFirst("\\?", "\\$1").replaceFirst("\\?", "\\$2"));
                for (int i = 0; i < 6; i++) st.execute("EXECUTE q('d" + i + "', 'u" + i + "')");
                StringBuilder b = new StringBuilder("# seed query plan for one device:");
                try (ResultSet rs = st.executeQuery("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE q('d0', 'u0')")) {
                    while (rs.next()) b.append("\n#   ").append(rs.getString(1));
                }
                st.execute("DEALLOCATE q");
                System.out.println(b);
            }
        }

        void catchUp(int to, int from) throws SQLException {
            String[] devs = new String[from - to];
            String[] convs = new String[from - to];
            for (int i = to; i < from; i++) {
                int p = shape.lagOrder[i];
                devs[i - to] = Shape.device(shape.devOf[p]);
                convs[i - to] = Shape.conv(shape.convOf[p]);
            }
            try (Connection c = db.connection()) {
                Array a = c.createArrayOf("text", devs);
                Array b = c.createArrayOf("text", convs);
                try (PreparedStatement ps = c.prepareStatement("UPDATE device_cursors dc SET delivered_seq = c.head_seq"
                        + " FROM unnest(?::text[], ?::text[]) AS x(d, cv), conversations c"
                        + " WHERE dc.device_id = x.d AND dc.conv_id = x.cv AND c.conv_id = x.cv")) {
                    ps.setArray(1, a);
                    ps.setArray(2, b);
                    int updated = ps.executeUpdate();
                    if (updated != from - to) throw new IllegalStateException("caught up " + updated + " of " + (from - to));
                }
                try (Statement st = c.createStatement()) {
                    st.execute("VACUUM ANALYZE device_cursors");
                }
            }
        }

        /**
         * One tick of the seed's sweep: for every online device, its conversations with head and
         * cursor (one query), a hint counted where delivered &lt; head. One connection and one
         * prepared statement for the whole tick (the most favourable set-up for the seed).
         */
        Tick tick() throws SQLException {
            try (Connection c = db.connection(); Statement st = c.createStatement();
                 PreparedStatement ps = c.prepareStatement(SEED_QUERY)) {
                long backend;
                try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                    rs.next();
                    backend = rs.getLong(1);
                }
                // Warm the statement (server-side prepare after pgjdbc's 5 uses) outside the measurement.
                for (int d = 0; d < Math.min(shape.devices, 10); d++) run(ps, d, new long[2]);
                long[] before = stats(st);
                long bcpu0 = procCpuMs(backend);
                long[] acc = new long[2];   // rows, lagging
                long cpu0 = threads.getCurrentThreadCpuTime();
                long wall0 = System.nanoTime();
                for (int d = 0; d < shape.devices; d++) run(ps, d, acc);
                long wall = System.nanoTime() - wall0;
                long cpu = threads.getCurrentThreadCpuTime() - cpu0;
                long bcpu = procCpuMs(backend) - bcpu0;
                long[] after = stats(st);
                return new Tick(cpu / 1e6, wall / 1e6, acc[1], acc[1], shape.devices, acc[0],
                        after[0] - before[0], after[1] - before[1], after[2] - before[2], after[3] - before[3], bcpu);
            }
        }

        private void run(PreparedStatement ps, int d, long[] acc) throws SQLException {
            ps.setString(1, Shape.device(d));
            ps.setString(2, Shape.user(d));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    acc[0]++;
                    long head = rs.getLong(2);
                    long delivered = rs.getLong(3);
                    if (delivered < head) acc[1]++;   // the seed sends {"t":"hint",...} here
                }
            }
        }

        /** {tup_returned, tup_fetched, blks_hit, blks_read} of this database, after flushing this backend's counters. */
        private long[] stats(Statement st) throws SQLException {
            st.execute("SELECT pg_stat_force_next_flush()");   // flushed when the backend goes idle after it
            try (ResultSet rs = st.executeQuery("SELECT tup_returned, tup_fetched, blks_hit, blks_read FROM pg_stat_database"
                    + " WHERE datname = current_database()")) {
                rs.next();
                return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)};
            }
        }

        private void copyIn(CopyManager copy, String sql, java.util.function.IntFunction<String> line)
                throws SQLException, IOException {
            int slice = 100_000;
            for (int from = 0; from < shape.n; from += slice) {
                StringBuilder b = new StringBuilder();
                for (int p = from; p < Math.min(shape.n, from + slice); p++) b.append(line.apply(p));
                copy.copyIn(sql, new StringReader(b.toString()));
            }
        }
    }

    /** utime + stime of a local process in ms (10 ms resolution), -1 if unreadable. */
    private static long procCpuMs(long pid) {
        try {
            String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10;   // fields 14, 15; USER_HZ = 100
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    // ------------------------------------------------------------------ output

    private static Tick median(Tick[] ticks) {
        Tick[] s = ticks.clone();
        Arrays.sort(s, Comparator.comparingDouble(Tick::cpuMs));
        Tick m = s[s.length / 2];
        double[] walls = Arrays.stream(ticks).mapToDouble(Tick::wallMs).sorted().toArray();
        return new Tick(m.cpuMs(), walls[walls.length / 2], m.hints(), m.hintRecords(), m.queries(), m.rows(),
                m.tupReturned(), m.tupFetched(), m.blksHit(), m.blksRead(), m.dbCpuMs());
    }

    private static String list(Tick[] ticks, boolean cpu) {
        StringBuilder b = new StringBuilder("[");
        for (Tick t : ticks) b.append(b.length() > 1 ? " " : "").append(String.format(Locale.ROOT, "%.2f", cpu ? t.cpuMs() : t.wallMs()));
        return b.append(']').toString();
    }

    private static String pct(double f) {
        return String.format(Locale.ROOT, "%.2g%%", f * 100);
    }

    private void printTable(List<Double> fs) {
        System.out.println();
        System.out.println("# Streams, first pass after a start (one tick per N, the first one due interval after the driver"
                + " started; 'visited' = online pairs the pass visited, SweepStats.pairsVisited)");
        System.out.printf("%9s %6s %7s %8s | %9s %9s %6s  %s%n", "N", "f", "lagging", "visited", "st cpu ms", "st wall",
                "hints", "loaded");
        for (FirstPass r : firstPasses) {
            System.out.printf(Locale.ROOT, "%9d %6s %7d %8d | %9.2f %9.2f %6d  %s%n", r.n(), pct(r.f()), r.lagging(),
                    r.visited(), r.tick().cpuMs(), r.tick().wallMs(), r.tick().hints(), r.piped() ? "piped" : "prefilled");
        }
        System.out.println();
        System.out.println("# steady ticks (median of --repeats); 'visited' = lagging index entries + online pairs visited"
                + " outside it (0: no event since the first pass)");
        String head = "%9s %6s %7s %8s | %9s %9s %6s %4s | %9s %9s %7s %8s %11s %9s %8s%n";
        System.out.printf(head, "N", "f", "lagging", "visited", "st cpu ms", "st wall", "hints", "DBr",
                "seed cpu", "seed wall", "queries", "rows", "tup_return", "blks_hit", "pg cpu");
        for (Row r : rows) {
            Tick s = r.streams();
            Tick d = r.seed();
            System.out.printf(Locale.ROOT, "%9d %6s %7d %8d | %9.2f %9.2f %6d %4d | %9s %9s %7s %8s %11s %9s %8s%n",
                    r.n(), pct(r.f()), r.lagging(), r.visited(), s.cpuMs(), s.wallMs(), s.hints(), 0,
                    d.ran() ? fmt(d.cpuMs()) : "n/r", d.ran() ? fmt(d.wallMs()) : "n/r",
                    d.ran() ? String.valueOf(d.queries()) : "n/r", d.ran() ? String.valueOf(d.rows()) : "n/r",
                    d.ran() ? String.valueOf(d.tupReturned()) : "n/r", d.ran() ? String.valueOf(d.blksHit()) : "n/r",
                    d.ran() ? String.format(Locale.ROOT, "%.0f", d.dbCpuMs()) : "n/r");
        }
        System.out.println();
        System.out.println("# growth between consecutive sizes, same f (x = ratio; N and lagging pairs grow by the first two columns)");
        System.out.printf("%-20s %6s %7s %8s | %9s %9s | %9s %9s %8s %11s %8s%n", "step", "f", "N x", "lag x",
                "st cpu x", "st wall x", "seed cpu", "seed wall", "rows x", "tup_ret x", "pg cpu x");
        for (double f : fs) {
            Row prev = null;
            for (Row r : rows) {
                if (r.f() != f) continue;
                if (prev != null) {
                    Tick a = prev.seed();
                    Tick b = r.seed();
                    boolean both = a.ran() && b.ran();
                    System.out.printf(Locale.ROOT, "%-20s %6s %7.1f %8s | %9.2f %9.2f | %9s %9s %8s %11s %8s%n",
                            prev.n() + "->" + r.n(), pct(f), (double) r.n() / prev.n(),
                            prev.lagging() == 0 ? "-" : String.format(Locale.ROOT, "%.1f", (double) r.lagging() / prev.lagging()),
                            r.streams().cpuMs() / prev.streams().cpuMs(), r.streams().wallMs() / prev.streams().wallMs(),
                            both ? fmt(b.cpuMs() / a.cpuMs()) : "n/r", both ? fmt(b.wallMs() / a.wallMs()) : "n/r",
                            both ? fmt((double) b.rows() / a.rows()) : "n/r",
                            both ? fmt((double) b.tupReturned() / a.tupReturned()) : "n/r",
                            both && a.dbCpuMs() > 0 ? fmt(b.dbCpuMs() / a.dbCpuMs()) : "n/r");
                }
                prev = r;
            }
        }
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
