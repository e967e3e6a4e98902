package im.bench;

import im.infra.ops.Metrics;
import static im.bench.BenchEnv.deleteTree;
import static im.bench.BenchEnv.load1;
import static im.bench.BenchEnv.loadAvg;
import static im.bench.BenchEnv.printServer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.ClientRuntime;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ReceivedEvent;
import im.delivery.route.DeliveryConfig;
import im.delivery.route.DeliveryNode;
import im.sweeper.Sweeper;
import im.sweeper.SweeperConfig;
import im.embedded.EmbeddedKafkaBroker;
import im.embedded.EmbeddedPg;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.store.directory.Directory;
import im.protocol.Acked;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Hint;
import im.protocol.Limits;
import im.protocol.Receipts;
import im.protocol.ReceiptsReply;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Subbed;
import im.relay.CdcRelay;
import im.relay.RelayConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * End-to-end delivery benchmark: one JVM runs embedded PostgreSQL, an embedded Kafka broker, the
 * CDC relay, one delivery node and the gateway(s), exactly as {@code Pipeline} does in the tests;
 * raw WebSocket senders send at a fixed rate (open loop) into G group conversations of M members;
 * the M-1 recipients of each conversation are connected (SDK or raw WebSocket) and acknowledge.
 *
 * <p>Per push it measures send start → {@code sent} and send start → {@code event} received, and
 * splits the latter with timestamps that need no guessing: the event's {@code at} (PostgreSQL
 * {@code clock_timestamp()} at INSERT, just before COMMIT) and the Kafka record timestamp of the
 * event in {@code events} (set by the relay's producer when it publishes), which a tap consumer in
 * this JVM reads. send→push = (send→insert) + (insert→Kafka) + (Kafka→push). The relay's own
 * commit→Kafka-ack lag ({@link CdcRelay#observeLag}) is reported beside. In the same run it measures
 * the floors: Kafka produce→consume on the same broker ({@link KafkaFloor}) and that relay lag.
 *
 * <p>Cursor writes: gateway counters (pushes, acks, cursor transactions) and the table's actual row
 * writes ({@code pg_stat_user_tables}) over each phase, with and without ack coalescing.
 */
@Command(name = "delivery-bench", mixinStandardHelpOptions = true,
        description = "end-to-end delivery latency (send -> push) beside the Kafka and Debezium floors, and cursor writes per push")
public final class DeliveryBench implements Callable<Integer> {
    static final String ADMIN_TOKEN = "bench-admin-token-0123456789";
    static final int POOL = 16;

    @Option(names = "--groups", description = "group conversations, default ${DEFAULT-VALUE}")
    int groups = 50;
    @Option(names = "--members", description = "members per conversation (1 sender + members-1 recipients), default ${DEFAULT-VALUE}")
    int members = 8;
    @Option(names = "--rate", description = "target sends per second, all senders together (open loop), default ${DEFAULT-VALUE}")
    int rate = 200;
    @Option(names = "--rates", split = ",", description = "capacity steps: run every mode at each of these rates"
            + " (fresh fixtures per step) and print the highest that holds p99 send->push <= 150 ms, 0 missing pushes, 0 errors;"
            + " a rate may repeat: --rates 600,600 reads the second step, the first one warms the JVMs up")
    List<Integer> rates = List.of();
    @Option(names = "--seconds", description = "measured seconds per mode, default ${DEFAULT-VALUE}")
    int seconds = 20;
    @Option(names = "--warmup", description = "warm-up seconds at the target rate before each measurement, default ${DEFAULT-VALUE}")
    int warmup = 5;
    @Option(names = "--first-warmup", description = "warm-up seconds of the first mode (the JVM, relay and Streams"
            + " are cold after start), default ${DEFAULT-VALUE}")
    int firstWarmup = 15;
    @Option(names = "--body-bytes", description = "message body size, default ${DEFAULT-VALUE}")
    int bodyBytes = 200;
    @Option(names = "--modes", split = ",", description = "any of raw,raw-each,sdk, run in the order given; default ${DEFAULT-VALUE}."
            + " sdk: ImClient recipients (durable store, coalesced acks); raw: raw WebSocket recipients acking cumulatively"
            + " every --ack-every pushes or --ack-window-ms; raw-each: raw recipients acking every push at once, gateway with IM_ACK_BATCH_MS=0 and IM_ACK_THROTTLE_MS=0")
    List<String> modes = List.of("raw", "raw-each", "sdk");
    @Option(names = "--ack-every", description = "raw mode: ack at once after this many unacked pushes of a conversation, default ${DEFAULT-VALUE}")
    int ackEvery = 32;
    @Option(names = "--ack-window-ms", description = "raw mode: otherwise ack at most this long after the first unacked push, default ${DEFAULT-VALUE}")
    int ackWindowMs = 10;
    @Option(names = "--partitions", description = "IM_PARTITIONS (conversation-keyed topics), default ${DEFAULT-VALUE}")
    int partitions = 8;
    @Option(names = "--relay-poll-ms", description = "IM_RELAY_POLL_MS (Debezium poll.interval.ms), default ${DEFAULT-VALUE}")
    int relayPollMs = Integer.parseInt(ConfigKeys.RELAY_POLL_MS.defaultValue());
    @Option(names = "--ack-throttle-ms", description = "IM_ACK_THROTTLE_MS (cursor writes per device and conversation), default ${DEFAULT-VALUE}")
    int ackThrottleMs = Integer.parseInt(ConfigKeys.ACK_THROTTLE_MS.defaultValue());
    @Option(names = "--send-lanes", description = "IM_SEND_LANES (group commit; 0 = one transaction per send), default ${DEFAULT-VALUE}")
    int sendLanes = im.store.send.SendService.DEFAULT_LANES;
    @Option(names = "--floor-messages", description = "messages per Kafka floor measurement, default ${DEFAULT-VALUE}")
    int floorMessages = 1000;
    @Option(names = "--work-dir", description = "parent of the temp dir (databases, broker, client state); default java.io.tmpdir")
    Path workDir;
    @Option(names = "--sdk-workers", description = "sdk mode: the recipients share one ClientRuntime with this many workers;"
            + " 0 = every ImClient has threads of its own; default ${DEFAULT-VALUE}")
    int sdkWorkers = im.client.ClientRuntime.DEFAULT_WORKERS;
    @Option(names = "--pgbench", description = "with --rates: after the steps, the send transaction alone through this pgbench"
            + " (-M prepared, closed loop), printed beside the capacity; default ${DEFAULT-VALUE}")
    String pgbench = "/usr/bin/pgbench";
    @Option(names = "--pgbench-clients", description = "pgbench clients, default ${DEFAULT-VALUE}")
    int pgbenchClients = 16;
    @Option(names = "--pgbench-convs", description = "conversations pgbench sends to, default ${DEFAULT-VALUE}")
    int pgbenchConvs = 1000;
    @Option(names = "--client-dir", description = "parent of the SDK recipients' state directories (sdk mode); default the temp dir,"
            + " on the disk PostgreSQL and the broker write to. A devices' own storage is not the server's disk: /dev/shm"
            + " keeps their fsyncs off it (their CPU still counts)")
    Path clientDir;
    @Option(names = "--sweeper", description = "also run a sweeper (IM_SWEEP_MS and IM_HINT_BACKOFF_MS at their defaults) in the"
            + " pipeline, as ./im platform does, and count the hints recipients receive; raw mode also counts the needless ones"
            + " (for a head the recipient already held)")
    boolean sweeper;
    @Option(names = "--reads", description = "sdk mode: every recipient marks each message it stores as read (ImClient.markRead,"
            + " coalesced per conversation), as a user with the conversation open does")
    boolean reads;
    @Option(names = "--receipts-ms", description = "every sender asks the receipts of its last (up to 100) messages this often,"
            + " the senders' timers spread over the interval; 0 = never, default ${DEFAULT-VALUE}")
    int receiptsMs;
    @Option(names = "--keep", description = "keep the temp dir")
    boolean keep;

    private final ObjectMapper json = new ObjectMapper();
    /** The send transaction alone through pgbench, after the capacity steps; null if not run. */
    private PgbenchFloor.Result sendFloor;
    private final List<Result> results = new ArrayList<>();
    private final Map<String, Histogram> floors = new LinkedHashMap<>();
    /** cmid -> {Kafka record timestamp ms, tap receipt epoch µs}, from the tap consumer on events. */
    private final Map<String, long[]> kafkaTimes = new ConcurrentHashMap<>();
    private final AtomicReference<ConcurrentHistogram> lagSink = new AtomicReference<>();
    private final ScheduledExecutorService timer = Executors.newScheduledThreadPool(1, r -> {
        Thread t = new Thread(r, "bench-ack-timer");
        t.setDaemon(true);
        return t;
    });
    /** Raw recipients' ack policy (--ack-every, --ack-window-ms); set when the options are. */
    private CumulativeAcks acks;

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "bench-logback.xml");
        }
        int rc = new CommandLine(new DeliveryBench()).execute(args);
        System.exit(rc);
    }

    /** The fixtures of one mode: its own users and conversations, so modes never see each other's events. */
    record Fixture(String tag, List<String> convs, List<String> senderTokens, List<List<String>> recipientTokens) {
    }

    record Counters(long pushed, long acks, long txns, long rows, long relayPublished, AckedBuckets acked) {
        Counters minus(Counters o) {
            return new Counters(pushed - o.pushed, acks - o.acks, txns - o.txns, rows - o.rows, relayPublished - o.relayPublished,
                    acked.minus(o.acked));
        }
    }

    record Result(String mode, String ackPolicy, long ackBatchMs, long sends, double seconds, double lateMaxMs,
                  Histogram sendToSent, Histogram sendToPush, Histogram sendToInsert, Histogram insertToKafka,
                  Histogram kafkaToPush, Histogram kafkaToTap, Histogram sendToStored, Histogram relayLag,
                  long expectedPushes, long measuredPushes, long missingPushes, long errors, Counters c,
                  double cpuBusy, double jvmCpu, String load, int rate, Map<String, Double> roleCpuMs) {
        /** The capacity bounds of issue 12: p99 send->push <= 150 ms, nothing missing, no error reply. */
        boolean holds() {
            return missingPushes == 0 && errors == 0 && sendToPush.getValueAtPercentile(99) <= 150_000;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (groups < 1 || members < 2 || rate < 1 || seconds < 1 || warmup < 0 || firstWarmup < 0 || bodyBytes < 1 || ackEvery < 1 || ackWindowMs < 0) {
            System.err.println("groups, rate, seconds, body-bytes, ack-every must be >= 1; members >= 2");
            return 2;
        }
        for (String m : modes) {
            if (!List.of("sdk", "raw", "raw-each").contains(m)) {
                System.err.println("unknown mode " + m + " (sdk, raw, raw-each)");
                return 2;
            }
        }
        Path tmp = Files.createTempDirectory(workDir == null ? Path.of(System.getProperty("java.io.tmpdir")) : workDir,
                "delivery-bench-");
        long wall0 = System.nanoTime();
        acks = new CumulativeAcks(ackEvery, ackWindowMs, timer);
        System.out.printf("# delivery bench: groups=%d members=%d (recipients %d) rate=%d/s warmup=%ds (first mode %ds) measured=%ds body=%dB"
                        + " modes=%s partitions=%d relay-poll=%dms ack-throttle=%dms send-lanes=%d sdk-workers=%s%n",
                groups, members, members - 1, rate, warmup, Math.max(warmup, firstWarmup), seconds, bodyBytes, modes, partitions, relayPollMs,
                ackThrottleMs, sendLanes, sdkWorkers == 0 ? "0 (own threads per client)" : sdkWorkers + " (one shared ClientRuntime)");
        System.out.printf("# machine: nproc=%d, java %s (%s), %s %s, load avg at start %s%n",
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), System.getProperty("os.name"), System.getProperty("os.version"),
                loadAvg());
        System.out.println("# temp dir: " + tmp + (clientDir == null ? "" : "; SDK client state under " + clientDir));
        try (EmbeddedPg pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false);
             EmbeddedKafkaBroker kafka = EmbeddedKafkaBroker.start(tmp.resolve("kafka"))) {
            pg.createDatabase("bench");
            try (Database db = Database.open(pg.dbConfig("bench", POOL), "bench")) {
                Database.migrate(db.dataSource());
                try (Connection c = db.connection()) {
                    printServer(c, List.of("server_version", "synchronous_commit", "fsync", "wal_level", "shared_buffers"));
                }
                Map<String, String> env = new HashMap<>();
                env.put(ConfigKeys.PG_URL.name(), pg.jdbcUrl("bench"));
                env.put(ConfigKeys.PG_USER.name(), EmbeddedPg.USER);
                env.put(ConfigKeys.PG_PASSWORD.name(), EmbeddedPg.PASSWORD);
                env.put(ConfigKeys.PG_POOL_SIZE.name(), String.valueOf(POOL));
                env.put(ConfigKeys.KAFKA_BOOTSTRAP.name(), kafka.bootstrapServers());
                env.put(ConfigKeys.TOPIC_PREFIX.name(), "bench.");
                env.put(ConfigKeys.RELAY_SLOT.name(), "bench_" + Long.toString(System.nanoTime() & 0xffffffL, 36));
                env.put(ConfigKeys.RELAY_POLL_MS.name(), String.valueOf(relayPollMs));
                env.put(ConfigKeys.ACK_THROTTLE_MS.name(), String.valueOf(ackThrottleMs));
                env.put(ConfigKeys.SEND_LANES.name(), String.valueOf(sendLanes));
                env.put(ConfigKeys.PARTITIONS.name(), String.valueOf(partitions));
                env.put(ConfigKeys.GATEWAY_HOST.name(), "127.0.0.1");
                env.put(ConfigKeys.GATEWAY_PORT.name(), "0");
                env.put(ConfigKeys.ADMIN_PORT.name(), "0");
                env.put(ConfigKeys.ADMIN_TOKEN.name(), ADMIN_TOKEN);
                env.put(ConfigKeys.RATE_LIMIT.name(), "1000000");
                env.put(ConfigKeys.MAX_INFLIGHT.name(), "10000");
                env.put(ConfigKeys.STATE_DIR.name(), Files.createDirectories(tmp.resolve("streams")).toString());
                Settings settings = Settings.of(env);
                TopicNames topics = TopicNames.from(settings);
                SharedTopics.create(kafka.bootstrapServers(), topics, partitions);

                Map<String, Fixture> fixtures = new LinkedHashMap<>();
                long f0 = System.nanoTime();
                List<Integer> steps = rates.isEmpty() ? List.of(rate) : rates;
                for (int k = 0; k < steps.size(); k++) {   // a rate may repeat (e.g. a warm-up step at the measured rate)
                    int r = steps.get(k);
                    for (String m : modes) {
                        fixtures.put(m + "@" + k, fixtures(db, m.replace("-", "") + (rates.isEmpty() ? "" : "r" + r + (k == steps.indexOf(r) ? "" : "s" + k))));
                    }
                }
                pgDataDir = pg.dataDir();
                System.out.printf("# fixtures: %d modes x (%d conversations x %d members, one device each) in %.1f s%n",
                        modes.size(), groups, members, (System.nanoTime() - f0) / 1e9);

                long s0 = System.nanoTime();
                try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached()).observeLag(this::onLag);
                     DeliveryNode node = DeliveryNode.start(DeliveryConfig.from(settings), Metrics.detached());
                     Sweeper sweep = sweeper ? Sweeper.start(SweeperConfig.from(settings), Metrics.detached()) : null;
                     Gateway gwBatch = Gateway.start(GatewayConfig.from(settings.with(ConfigKeys.GATEWAY_ID, "bench-gw-batch")),
                             db.dataSource(), Faults.none(), Clock.systemUTC());
                     Gateway gwNoBatch = modes.contains("raw-each")
                             ? Gateway.start(GatewayConfig.from(settings.with(ConfigKeys.GATEWAY_ID, "bench-gw-nobatch")
                                     .with(ConfigKeys.ACK_BATCH_MS, "0").with(ConfigKeys.ACK_THROTTLE_MS, "0")), db.dataSource(), Faults.none(), Clock.systemUTC())
                             : null;
                     Tap tap = new Tap(kafka.bootstrapServers(), topics.events()).start()) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                    while (!(relay.isActive() && node.isRunning() && (sweep == null || sweep.isRunning()))) {
                        if (System.nanoTime() > deadline) throw new IllegalStateException("relay/delivery node not running after 90 s");
                        Thread.sleep(50);
                    }
                    System.out.printf("# pipeline up in %.1f s (relay active, delivery node RUNNING, gateways %s)%n",
                            (System.nanoTime() - s0) / 1e9, gwNoBatch == null ? gwBatch.id() : gwBatch.id() + ", " + gwNoBatch.id());

                    // Floors, before the load, on an otherwise idle broker.
                    floor("kafka produce->consume, busy poll (fetch.max.wait.ms=0)", kafka.bootstrapServers(), "bench.floor-busy", 0);
                    floor("kafka produce->consume, long poll (fetch.max.wait.ms=50)", kafka.bootstrapServers(), "bench.floor-long", 50);

                    for (int k = 0; k < steps.size(); k++) {
                        rate = steps.get(k);
                        for (String m : modes) {
                            Gateway gw = m.equals("raw-each") ? gwNoBatch : gwBatch;
                            runMode(m, fixtures.get(m + "@" + k), gw, relay, db, tmp);
                        }
                    }
                }
                if (!rates.isEmpty()) sendFloor(pg, db, tmp);
            }
        } finally {
            timer.shutdownNow();
            if (!keep) deleteTree(tmp);
        }
        printTables();
        System.out.printf(Locale.ROOT, "# whole run %.0f s; load avg at end %s%n", (System.nanoTime() - wall0) / 1e9, loadAvg());
        return 0;
    }

    private void onLag(long ms) {
        ConcurrentHistogram h = lagSink.get();
        if (h != null) h.recordValue(Math.max(0, ms));
    }

    private void floor(String name, String bootstrap, String topic, int fetchWait) throws Exception {
        Histogram h = KafkaFloor.measure(bootstrap, topic, floorMessages, bodyBytes, fetchWait);
        floors.put(name, h);
        System.out.printf(Locale.ROOT, "# floor: %-58s n=%d p50 %.2f ms p99 %.2f ms max %.2f ms; load %s%n", name,
                h.getTotalCount(), ms(h, 50), ms(h, 99), h.getMaxValue() / 1000.0, load1());
    }

    // ------------------------------------------------------------------ fixtures

    private Fixture fixtures(Database db, String tag) {
        Directory dir = new Directory(db.dataSource(), Clock.systemUTC());
        List<String> convs = new ArrayList<>();
        List<String> senders = new ArrayList<>();
        List<List<String>> recipients = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            List<String> users = new ArrayList<>();
            List<String> tokens = new ArrayList<>();
            for (int k = 0; k < members; k++) {
                String user = tag + "-u" + g + "-" + k;
                dir.createUser(user, "bench " + user);
                tokens.add(dir.registerDevice(user, tag + "-d" + g + "-" + k).token());
                users.add(user);
            }
            String conv = tag + "-c" + g;
            dir.createConversation(conv, "group", users);
            convs.add(conv);
            senders.add(tokens.get(0));
            recipients.add(List.copyOf(tokens.subList(1, tokens.size())));
        }
        return new Fixture(tag, convs, senders, recipients);
    }

    // ------------------------------------------------------------------ one mode

    /** Everything one mode records; arrays are indexed by send number. */
    final class Run {
        final String mode;
        final Cmids ids;
        final int total;
        final int measuredFrom;
        final long[] intendedNanos;
        final long[] sendEpochMicros;
        final ConcurrentHistogram sendToSent = new ConcurrentHistogram(TimeUnit.SECONDS.toMicros(120), 3);
        final int cap;
        final AtomicInteger nPush = new AtomicInteger();
        final int[] pIdx;
        final long[] pNanos;
        final long[] pMicros;
        final long[] pAt;
        final AtomicInteger nStored = new AtomicInteger();
        final int[] sIdx;
        final long[] sNanos;
        final AtomicLong probePushes = new AtomicLong();
        final AtomicLong sentReplies = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final AtomicLong hints = new AtomicLong();
        /** Raw recipients: hints for a head the recipient already held when it arrived. */
        final AtomicLong needlessHints = new AtomicLong();
        /** Needless hints by the second of the phase they arrived in (from the Run's creation), for where they come from. */
        final java.util.concurrent.atomic.AtomicLongArray needlessBySecond = new java.util.concurrent.atomic.AtomicLongArray(3600);
        final long createdNanos = System.nanoTime();
        final AtomicLong gaps = new AtomicLong();
        final AtomicLong writeErrors = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();
        /** Reads sent (markRead calls answered) and receipts answered, with --reads / --receipts-ms. */
        final AtomicLong readsAnswered = new AtomicLong();
        final AtomicLong receiptsAnswered = new AtomicLong();
        /** Per group, the seqs of its sender's last messages (for --receipts-ms), newest last. */
        final Map<Integer, java.util.ArrayDeque<Long>> lastSeqs = new java.util.concurrent.ConcurrentHashMap<>();

        Run(String mode, String tag, int warmupSeconds) {
            this.mode = mode;
            this.ids = new Cmids(tag);
            this.total = (warmupSeconds + seconds) * rate;
            this.measuredFrom = warmupSeconds * rate;
            this.intendedNanos = new long[total];
            this.sendEpochMicros = new long[total];
            this.cap = total * (members - 1) + 1024;
            this.pIdx = new int[cap];
            this.pNanos = new long[cap];
            this.pMicros = new long[cap];
            this.pAt = new long[cap];
            boolean sdk = mode.equals("sdk");
            this.sIdx = new int[sdk ? cap : 0];
            this.sNanos = new long[sdk ? cap : 0];
        }

        void push(Event ev, long nanos, long micros) {
            if (!Event.MSG.equals(ev.kind())) return;
            int i = ids.index(ev.cmid());
            if (i == -1) {
                probePushes.incrementAndGet();
                return;
            }
            if (i < 0) return;
            int k = nPush.getAndIncrement();
            if (k >= cap) return;
            pIdx[k] = i;
            pNanos[k] = nanos;
            pMicros[k] = micros;
            pAt[k] = ev.at();
        }

        void stored(String cmid, long nanos) {
            int i = ids.index(cmid);
            if (i < 0) return;
            int k = nStored.getAndIncrement();
            if (k >= cap) return;
            sIdx[k] = i;
            sNanos[k] = nanos;
        }

        void error(String what) {
            if (errors.incrementAndGet() == 1) firstError.set(what);
        }

        long pushesOf(int fromIdx) {
            int n = Math.min(nPush.get(), cap);
            long c = 0;
            for (int k = 0; k < n; k++) if (pIdx[k] >= fromIdx) c++;
            return c;
        }
    }

    private void runMode(String mode, Fixture fx, Gateway gw, CdcRelay relay, Database db, Path tmp) throws Exception {
        boolean first = results.isEmpty();
        Run run = new Run(mode, fx.tag(), first ? Math.max(warmup, firstWarmup) : warmup);
        URI uri = URI.create("ws://127.0.0.1:" + gw.port() + "/ws");
        ExecutorService io = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "bench-ws-io");
            t.setDaemon(true);
            return t;
        });
        HttpClient http = HttpClient.newBuilder().executor(io).build();
        List<RawWs> senders = new ArrayList<>();
        List<RawWs> rawRecipients = new ArrayList<>();
        List<ImClient> sdkRecipients = new ArrayList<>();
        ClientRuntime sdkRuntime = mode.equals("sdk") && sdkWorkers > 0 ? ClientRuntime.create(sdkWorkers) : null;
        String body = SendBench.body(bodyBytes);
        // The previous mode's tail (relay backlog, cursor writes) must not spill into this one.
        settle(relay::published, 500, 20_000);
        settle(gw::acksReceived, 300, 5_000);
        System.out.printf("# %s: starting, load avg %s%n", mode, loadAvg());
        long c0 = System.nanoTime();
        Path clientStates = null;
        try {
            // Recipients first (connect, auth, sub), then senders.
            if (mode.equals("sdk")) {
                clientStates = Files.createTempDirectory(clientDir == null ? tmp : clientDir, "clients-" + mode);
                connectSdk(run, fx, uri, clientStates, sdkRuntime, sdkRecipients);
            } else {
                boolean each = mode.equals("raw-each");
                for (List<String> tokens : fx.recipientTokens()) {
                    for (String token : tokens) {
                        RawWs c = RawWs.open(http, uri, run.writeErrors);
                        rawRecipients.add(c);
                        Subbed s = c.authAndSub(token, true);
                        // it takes what subbed reported as held (the group's join events) and acks it: a hint
                        // for it would otherwise be right, and counted as needless
                        c.state = CumulativeAcks.holdSubbed(c, s);
                        c.handler((conn, f, nanos, micros) -> onRecipientFrame(run, conn, f, nanos, micros, each));
                    }
                }
            }
            for (String token : fx.senderTokens()) {
                RawWs c = RawWs.open(http, uri, run.writeErrors);
                c.authAndSub(token, false);
                c.handler((conn, f, nanos, micros) -> onSenderFrame(run, f, nanos));
                senders.add(c);
            }
            int recipients = groups * (members - 1);
            System.out.printf(Locale.ROOT, "# %s: %d recipients (%s) and %d senders connected in %.1f s%n", mode, recipients,
                    mode.equals("sdk") ? "ImClient" : "raw WebSocket", senders.size(), (System.nanoTime() - c0) / 1e9);

            // Probe: one message per conversation, until every recipient got its push (routes are in place).
            long p0 = System.nanoTime();
            boolean ready = false;
            for (int attempt = 0; attempt < 30 && !ready; attempt++) {
                long before = run.probePushes.get();
                for (int g = 0; g < groups; g++) {
                    senders.get(g).send(new Send("p" + attempt + "-" + g, fx.convs().get(g), run.ids.probe(attempt, g), body));
                }
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (System.nanoTime() < until && run.probePushes.get() - before < recipients) Thread.sleep(10);
                ready = run.probePushes.get() - before >= recipients;
            }
            System.out.printf(Locale.ROOT, "# %s: routes %s after %.1f s of probes%n", mode,
                    ready ? "ready (every recipient got a probe push)" : "NOT complete", (System.nanoTime() - p0) / 1e9);
            settle(gw::acksReceived, 300, 5_000);

            Counters before = counters(gw, relay, db);
            java.util.concurrent.ScheduledExecutorService receiptsTimer = receiptsMs > 0 ? Executors.newSingleThreadScheduledExecutor() : null;
            if (receiptsTimer != null) {
                // Each sender polls on a timer of its own, as independent clients do: their phases are
                // spread over the interval (one timer firing all of them in the same millisecond would
                // be a burst of `groups` requests every interval that no population of users makes).
                java.util.concurrent.atomic.AtomicLong q = new java.util.concurrent.atomic.AtomicLong();
                long periodMicros = receiptsMs * 1000L;
                for (int g = 0; g < groups; g++) {
                    int group = g;
                    receiptsTimer.scheduleAtFixedRate(() -> {
                        java.util.ArrayDeque<Long> last = run.lastSeqs.get(group);
                        if (last == null) return;
                        List<Long> seqs;
                        synchronized (last) {
                            seqs = List.copyOf(last);
                        }
                        if (!seqs.isEmpty()) senders.get(group).send(new Receipts("q" + q.incrementAndGet(), fx.convs().get(group), seqs));
                    }, periodMicros + periodMicros * g / groups, periodMicros, TimeUnit.MICROSECONDS);
                }
            }
            Histogram lag;
            try {
                lag = measure(run, senders, fx, body);
            } finally {
                if (receiptsTimer != null) receiptsTimer.shutdownNow();
            }
            long expected = (long) (run.total - run.measuredFrom) * (members - 1);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (System.nanoTime() < deadline && run.pushesOf(run.measuredFrom) < expected) Thread.sleep(20);
            if (mode.equals("sdk")) {
                while (System.nanoTime() < deadline && run.nStored.get() < Math.min(run.nPush.get(), run.cap)) Thread.sleep(20);
            }
            settle(gw::acksReceived, 300, 5_000);
            settle(relay::published, 500, 20_000);
            Counters after = counters(gw, relay, db);
            results.add(result(run, gw, lag, expected, after.minus(before)));
            printResult(results.get(results.size() - 1));
            if (reads || receiptsMs > 0) {
                System.out.printf(Locale.ROOT, "# %s: %d reads and %d receipts answered (whole run, warm-up included)%n", mode,
                        run.readsAnswered.get(), run.receiptsAnswered.get());
            }
        } finally {
            for (ImClient c : sdkRecipients) c.close();
            if (sdkRuntime != null) sdkRuntime.close();
            for (RawWs c : rawRecipients) c.close();
            for (RawWs c : senders) c.close();
            io.shutdownNow();
            if (clientStates != null && clientDir != null && !keep) deleteTree(clientStates);
        }
    }

    private void connectSdk(Run run, Fixture fx, URI uri, Path stateRoot, ClientRuntime runtime, List<ImClient> out) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<ImClient>> fs = new ArrayList<>();
            int n = 0;
            for (List<String> tokens : fx.recipientTokens()) {
                for (String token : tokens) {
                    Path dir = stateRoot.resolve("r" + (n++));
                    fs.add(pool.submit(() -> {
                        ClientOptions o = ClientOptions.of(uri, token, dir).withAutoReconnect(false).withRequestTimeout(Duration.ofSeconds(30));
                        ImClient c = runtime == null ? ImClient.open(o) : ImClient.open(o, runtime);
                        c.addListener(new ClientListener() {
                            @Override
                            public void onPush(ServerFrame frame) {
                                if (frame instanceof EventPush ep) run.push(ep.ev(), System.nanoTime(), RawWs.epochMicros());
                                else if (frame instanceof Hint) run.hints.incrementAndGet();
                            }

                            @Override
                            public void onEvent(ReceivedEvent e) {
                                if (Event.MSG.equals(e.kind())) run.stored(e.cmid(), System.nanoTime());
                                if (reads && Event.MSG.equals(e.kind())) {
                                    c.markRead(e.conv(), e.seq()).whenComplete((st, err) -> {
                                        if (err == null) run.readsAnswered.incrementAndGet();
                                        else run.error("read: " + err);
                                    });
                                }
                            }
                        });
                        c.connect();
                        return c;
                    }));
                }
            }
            for (Future<ImClient> f : fs) out.add(f.get(120, TimeUnit.SECONDS));
        } finally {
            pool.shutdown();
        }
    }

    private void onSenderFrame(Run run, ServerFrame f, long nanos) {
        if (f instanceof ReceiptsReply) {
            run.receiptsAnswered.incrementAndGet();
        } else if (f instanceof Sent s) {
            if (s.dup()) run.error("dup reply " + s.rid());
            String rid = s.rid();
            if (rid.startsWith("s")) {
                int i = Integer.parseInt(rid.substring(1));
                java.util.ArrayDeque<Long> last = run.lastSeqs.computeIfAbsent(i % groups, g -> new java.util.ArrayDeque<>());
                synchronized (last) {
                    last.addLast(s.seq());
                    if (last.size() > Limits.RECEIPTS_MAX_SEQS) last.removeFirst();
                }
                run.sentReplies.incrementAndGet();
                if (i >= run.measuredFrom) run.sendToSent.recordValue(Math.max(1, (nanos - run.intendedNanos[i]) / 1000));
            }
        } else if (f instanceof ErrorFrame e) {
            run.error("sender: " + e.code() + " " + e.msg());
        }
    }

    private void onRecipientFrame(Run run, RawWs conn, ServerFrame f, long nanos, long micros, boolean each) {
        if (f instanceof EventPush ep) {
            Event ev = ep.ev();
            run.push(ev, nanos, micros);
            @SuppressWarnings("unchecked")
            Map<String, CumulativeAcks.Conv> convs = (Map<String, CumulativeAcks.Conv>) conn.state;
            if (acks.onPush(conn, convs, ev, each) == CumulativeAcks.Outcome.GAP) run.gaps.incrementAndGet();
        } else if (f instanceof Acked) {
            // fine
        } else if (f instanceof Hint h) {
            run.hints.incrementAndGet();
            @SuppressWarnings("unchecked")
            CumulativeAcks.Conv a = ((Map<String, CumulativeAcks.Conv>) conn.state).get(h.conv());
            if (a != null) {
                synchronized (a) {
                    if (h.head() <= a.cursor) {
                        run.needlessHints.incrementAndGet();
                        int sec = (int) Math.min(3599, (System.nanoTime() - run.createdNanos) / 1_000_000_000L);
                        run.needlessBySecond.incrementAndGet(sec);
                    }
                }
            }
        } else if (f instanceof ErrorFrame e) {
            run.error("recipient: " + e.code() + " " + e.msg());
        }
    }

    /** The open-loop pacer; returns the relay lag histogram of the measured window. */
    private Histogram measure(Run run, List<RawWs> senders, Fixture fx, String body) throws InterruptedException {
        long period = 1_000_000_000L / rate;
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        long measureFromNanos = start + run.measuredFrom * period;
        ConcurrentHistogram lag = new ConcurrentHistogram(3);
        SendBench.CpuSample cpu0 = null;
        long lateMax = 0;
        for (int i = 0; i < run.total; i++) {
            long target = start + i * period;
            long now;
            while ((now = System.nanoTime()) < target) LockSupport.parkNanos(target - now);
            if (i == run.measuredFrom) {
                cpu0 = SendBench.CpuSample.now();
                roles0 = RoleCpu.now(pgDataDir);
                requests0 = BrokerRequests.now();
                lagSink.set(lag);
            }
            if (i >= run.measuredFrom) lateMax = Math.max(lateMax, now - target);
            run.intendedNanos[i] = target;
            run.sendEpochMicros[i] = RawWs.epochMicros() - (System.nanoTime() - target) / 1000;
            int g = i % groups;
            senders.get(g).send(new Send("s" + i, fx.convs().get(g), run.ids.send(i), body));
        }
        long end = start + run.total * period;
        long now;
        while ((now = System.nanoTime()) < end) LockSupport.parkNanos(end - now);
        SendBench.CpuSample cpu1 = SendBench.CpuSample.now();
        RoleCpu.Snapshot roles1 = RoleCpu.now(pgDataDir);
        roleCpuMs = roles0 == null ? Map.of() : RoleCpu.between(roles0, roles1);
        if (roles0 != null) {
            System.out.println("# CPU of threads no role claimed, busiest:" + RoleCpu.top(roles0, roles1, "other", 6));
            System.out.println("# CPU of the bench clients' threads, busiest:" + RoleCpu.top(roles0, roles1, "bench clients", 8));
            System.out.println("# CPU of PostgreSQL's processes, busiest:" + RoleCpu.topPostgres(roles0, roles1, 6));
            System.out.println("# broker requests per 1,000 sends:"
                    + BrokerRequests.per1000(requests0, BrokerRequests.now(), run.total - run.measuredFrom, 10));
        }
        // Changes committed in the window reach the relay a little later; keep observing for 1 s.
        Thread.sleep(1000);
        lagSink.set(null);
        double[] busy = cpu0 == null ? new double[] {Double.NaN, Double.NaN} : cpu0.until(cpu1);
        cpuBusy = busy[0];
        jvmCpu = busy[1];
        loadAtEnd = load1();
        lateMaxMs = lateMax / 1e6;
        achievedSeconds = (end - measureFromNanos) / 1e9;
        return lag;
    }

    private double cpuBusy;
    private double jvmCpu;
    private Path pgDataDir;
    private RoleCpu.Snapshot roles0;
    private Map<String, Long> requests0;
    private Map<String, Double> roleCpuMs = Map.of();
    private String loadAtEnd;
    private double lateMaxMs;
    private double achievedSeconds;

    private Result result(Run run, Gateway gw, Histogram lag, long expected, Counters c) {
        Histogram sendToPush = hist();
        Histogram sendToInsert = hist();
        Histogram insertToKafka = hist();
        Histogram kafkaToPush = hist();
        Histogram kafkaToTap = hist();
        Histogram sendToStored = hist();
        int n = Math.min(run.nPush.get(), run.cap);
        long measured = 0;
        long noKafkaTime = 0;
        for (int k = 0; k < n; k++) {
            int i = run.pIdx[k];
            if (i < run.measuredFrom) continue;
            measured++;
            sendToPush.recordValue(Math.max(1, (run.pNanos[k] - run.intendedNanos[i]) / 1000));
            long atMicros = run.pAt[k] * 1000;
            sendToInsert.recordValue(Math.max(0, atMicros - run.sendEpochMicros[i]));
            long[] kt = kafkaTimes.get(run.ids.send(i));
            if (kt == null) {
                noKafkaTime++;
                continue;
            }
            long kMicros = kt[0] * 1000;
            insertToKafka.recordValue(Math.max(0, kMicros - atMicros));
            kafkaToPush.recordValue(Math.max(0, run.pMicros[k] - kMicros));
            kafkaToTap.recordValue(Math.max(0, kt[1] - kMicros));
        }
        int ns = Math.min(run.nStored.get(), run.sIdx.length);
        for (int k = 0; k < ns; k++) {
            int i = run.sIdx[k];
            if (i >= run.measuredFrom) sendToStored.recordValue(Math.max(1, (run.sNanos[k] - run.intendedNanos[i]) / 1000));
        }
        if (noKafkaTime > 0) System.err.printf("# %s: %d pushes without a tap timestamp%n", run.mode, noKafkaTime);
        if (run.errors.get() > 0) System.err.printf("# %s: %d error replies; first: %s%n", run.mode, run.errors.get(), run.firstError.get());
        if (run.writeErrors.get() > 0) System.err.printf("# %s: %d failed socket writes%n", run.mode, run.writeErrors.get());
        if (run.gaps.get() > 0) System.err.printf("# %s: %d gaps seen by raw recipients%n", run.mode, run.gaps.get());
        if (run.hints.get() > 0 || sweeper) {
            System.out.printf("# %s: %d hints received by recipients (whole phase), %d of them for a head the recipient held%s%n", run.mode,
                    run.hints.get(), run.needlessHints.get(), run.mode.equals("sdk") ? " (not counted in sdk mode)" : "");
            StringBuilder bySecond = new StringBuilder();
            for (int i = 0; i < run.needlessBySecond.length(); i++) {
                long count = run.needlessBySecond.get(i);
                if (count > 0) bySecond.append(' ').append(i).append("s:").append(count);
            }
            if (bySecond.length() > 0) System.out.printf("# %s: needless hints by second of the phase (from its start, warm-up included):%s%n", run.mode, bySecond);
        }
        if (gw.droppedPushes() > 0) System.err.printf("# %s: gateway dropped %d pushes (outbound queue full)%n", run.mode, gw.droppedPushes());
        String policy = switch (run.mode) {
            case "sdk" -> "SDK: durable store, then cumulative ack, 10 ms window, 1 in flight/conv";
            case "raw" -> "raw: cumulative ack every " + ackEvery + " pushes or " + ackWindowMs + " ms";
            default -> "raw: ack every push at once";
        };
        long batchMs = run.mode.equals("raw-each") ? 0 : 2;
        return new Result(run.mode, policy, batchMs, run.total - run.measuredFrom, achievedSeconds, lateMaxMs,
                run.sendToSent, sendToPush, sendToInsert, insertToKafka, kafkaToPush, kafkaToTap, sendToStored, lag,
                expected, measured, Math.max(0, expected - measured), run.errors.get(), c, cpuBusy, jvmCpu, loadAtEnd,
                rate, roleCpuMs);
    }

    private static Histogram hist() {
        return new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    }

    // ------------------------------------------------------------------ counters

    /** Waits until {@code counter} stopped changing for {@code quietMs} (at most {@code maxMs}). */
    private static void settle(LongSupplier counter, long quietMs, long maxMs) throws InterruptedException {
        long end = System.currentTimeMillis() + maxMs;
        long last = counter.getAsLong();
        long since = System.currentTimeMillis();
        while (System.currentTimeMillis() < end) {
            Thread.sleep(50);
            long v = counter.getAsLong();
            if (v != last) {
                last = v;
                since = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - since >= quietMs) {
                return;
            }
        }
    }

    private Counters counters(Gateway gw, CdcRelay relay, Database db) throws SQLException, InterruptedException {
        return new Counters(gw.pushed(), gw.acksReceived(), gw.cursorTransactions(), cursorRowWrites(db), relay.published(),
                AckedBuckets.of(gw.ackedLatency()));
    }

    /**
     * Row writes of device_cursors from the statistics. Backends report table statistics at most
     * once a second and an idle one only after 10 s, so every pooled connection (the gateway's
     * cursor writer uses this pool) first forces its pending statistics out.
     */
    private static long cursorRowWrites(Database db) throws SQLException, InterruptedException {
        List<Connection> held = new ArrayList<>();
        try {
            for (int i = 0; i < POOL; i++) held.add(db.connection());
            for (Connection c : held) {
                try (Statement st = c.createStatement()) {
                    st.execute("SELECT pg_stat_force_next_flush()");
                }
            }
        } finally {
            for (Connection c : held) c.close();
        }
        Thread.sleep(100);
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = st.executeQuery(
                    "SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname = 'device_cursors'")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    // ------------------------------------------------------------------ Kafka tap

    /** Reads the events topic in this JVM to learn each event's Kafka timestamp (and when a consumer sees it). */
    final class Tap implements AutoCloseable {
        private final KafkaConsumer<String, String> consumer;
        private final String topic;
        private final Thread thread;
        private volatile boolean running = true;

        Tap(String bootstrap, String topic) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            this.consumer = new KafkaConsumer<>(p);
            this.topic = topic;
            this.thread = new Thread(this::run, "bench-tap");
            this.thread.setDaemon(true);
        }

        Tap start() {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic)) parts.add(new TopicPartition(topic, pi.partition()));
            consumer.assign(parts);
            consumer.seekToEnd(parts);
            parts.forEach(consumer::position);
            thread.start();
            return this;
        }

        private void run() {
            while (running) {
                try {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        long micros = RawWs.epochMicros();
                        JsonNode v = json.readTree(r.value());
                        JsonNode cmid = v.get("cmid");
                        if (cmid != null && cmid.isTextual()) kafkaTimes.put(cmid.asText(), new long[] {r.timestamp(), micros});
                    }
                } catch (WakeupException e) {
                    return;
                } catch (Exception e) {
                    System.err.println("# tap: " + e);
                }
            }
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            consumer.wakeup();
            thread.join(5_000);
            consumer.close(Duration.ofSeconds(2));
        }
    }

    // ------------------------------------------------------------------ output

    private static double ms(Histogram h, double pct) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(pct) / 1000.0;
    }

    private static String p(Histogram h) {
        return String.format(Locale.ROOT, "%.1f / %.1f", ms(h, 50), ms(h, 99));
    }

    private void printResult(Result r) {
        System.out.printf(Locale.ROOT, "# %s: %d sends in %.1f s (%.0f/s, pacer max late %.1f ms), pushes %d of %d (missing %d), errors %d;"
                        + " send->sent %s, send->push %s ms (p50/p99); CPU busy %.0f%%, JVM %.0f%% of the machine, load %s%n",
                r.mode(), r.sends(), r.seconds(), r.sends() / r.seconds(), r.lateMaxMs(), r.measuredPushes(), r.expectedPushes(),
                r.missingPushes(), r.errors(), p(r.sendToSent()), p(r.sendToPush()), r.cpuBusy() * 100, r.jvmCpu() * 100, r.load());
    }

    private void printRoleCpu() {
        System.out.println();
        System.out.println("CPU by role, ms of CPU per 1,000 sends (thread CPU time of the roles' threads, PostgreSQL from /proc; measured window)");
        System.out.printf("%-9s %6s", "mode", "rate");
        for (String role : RoleCpu.ROLES) System.out.printf(" %9s", role.length() > 9 ? role.substring(0, 9) : role);
        System.out.printf(" %9s%n", "total");
        for (Result r : results) {
            double per = r.sends() / 1000.0;
            double total = 0;
            System.out.printf(Locale.ROOT, "%-9s %6d", r.mode(), r.rate());
            for (String role : RoleCpu.ROLES) {
                double v = r.roleCpuMs().getOrDefault(role, 0.0) / per;
                total += v;
                System.out.printf(Locale.ROOT, " %9.0f", v);
            }
            System.out.printf(Locale.ROOT, " %9.0f%n", total);
        }
    }

    /** The send transaction alone, through pgbench on the same PostgreSQL, once the platform is stopped. */
    private void sendFloor(EmbeddedPg pg, Database db, Path tmp) throws Exception {
        if (!PgbenchFloor.available(pgbench)) {
            System.out.println("# " + PgbenchFloor.missing(pgbench) + "; no send-transaction floor in this run");
            return;
        }
        PgbenchFloor f = new PgbenchFloor(pgbench, pgbenchClients, pgbenchConvs, Math.max(1, Math.min(pgbenchConvs, pgbenchClients / 2)));
        f.fixtures(new Directory(db.dataSource(), Clock.systemUTC()), "pgbench client");
        System.out.printf("# send transaction alone: pgbench -M prepared, %d clients, %d conversations, %d s after %d s warm-up, load avg %s%n",
                pgbenchClients, pgbenchConvs, seconds, warmup, loadAvg());
        sendFloor = f.run(db, pg.port(), EmbeddedPg.USER, EmbeddedPg.PASSWORD, "bench", SendBench.body(bodyBytes), "prepared",
                warmup, seconds, tmp, () -> { });
    }

    private void printCapacity() {
        if (rates.isEmpty()) return;
        System.out.println();
        System.out.println("Capacity (bounds: p99 send->push <= 150 ms, 0 missing pushes, 0 error replies)");
        for (String m : modes) {
            int best = 0;
            StringBuilder steps = new StringBuilder();
            for (Result r : results) {
                if (!r.mode().equals(m)) continue;
                steps.append(String.format(Locale.ROOT, " %d/s:%s(p99 %.0f ms, missing %d, errors %d)", r.rate(),
                        r.holds() ? "holds" : "FAILS", ms(r.sendToPush(), 99), r.missingPushes(), r.errors()));
                if (r.holds() && r.rate() > best) best = r.rate();
            }
            System.out.printf("  %-9s highest rate that holds: %s;%s%n", m, best == 0 ? "none" : best + " sends/s", steps);
            if (sendFloor != null && best > 0) {
                System.out.printf(Locale.ROOT, "  %-9s that rate / the send transaction alone through pgbench: %.2fx%n", m,
                        best / sendFloor.rate());
            }
        }
        if (sendFloor != null) {
            System.out.printf(Locale.ROOT, "  the send transaction alone (%s, %d clients, %d conversations, closed loop, nothing else running):"
                            + " %.0f sends/s, p50 %.2f ms, p99 %.2f ms%n", sendFloor.mode(), pgbenchClients, pgbenchConvs, sendFloor.rate(),
                    sendFloor.latencyMicros().getValueAtPercentile(50) / 1000.0, sendFloor.latencyMicros().getValueAtPercentile(99) / 1000.0);
        }
    }

    private void printTables() {
        if (results.isEmpty()) return;
        printRoleCpu();
        printCapacity();
        System.out.println();
        System.out.println("Latency, ms, p50 / p99 (measured window only; send start = the pacer's scheduled time)");
        System.out.printf("%-9s %7s %9s %13s %13s %13s %13s %13s %13s %13s %5s %5s %5s%n", "mode", "sends/s", "pushes",
                "send->sent", "send->push", "send->insert", "insert->kafka", "kafka->push", "relay lag*", "send->stored",
                "cpu%", "jvm%", "load");
        for (Result r : results) {
            System.out.printf(Locale.ROOT, "%-9s %7.0f %9d %13s %13s %13s %13s %13s %13s %13s %5.0f %5.0f %5s%n",
                    r.mode(), r.sends() / r.seconds(), r.measuredPushes(), p(r.sendToSent()), p(r.sendToPush()),
                    p(r.sendToInsert()), p(r.insertToKafka()), p(r.kafkaToPush()), pMs(r.relayLag()),
                    r.sendToStored().getTotalCount() == 0 ? "-" : p(r.sendToStored()), r.cpuBusy() * 100, r.jvmCpu() * 100, r.load());
        }
        System.out.println("* relay lag: CdcRelay.observeLag, commit -> Kafka ack per published change (events and cursor"
                + " changes), whole ms. insert = the event's `at` (clock_timestamp() at INSERT, just before COMMIT);"
                + " kafka = the record timestamp the relay's producer set; epoch values have 1 ms resolution.");
        for (Result r : results) {
            System.out.printf(Locale.ROOT, "  %-9s missing pushes %d of %d; relay record ts -> visible to a consumer (tap) p50 %.1f ms;"
                            + " relay lag max %d ms%n", r.mode(), r.missingPushes(), r.expectedPushes(), ms(r.kafkaToTap(), 50),
                    r.relayLag().getMaxValue());
        }

        System.out.println();
        System.out.println("Floors (same broker, same run, before the load)");
        for (Map.Entry<String, Histogram> f : floors.entrySet()) {
            Histogram h = f.getValue();
            System.out.printf(Locale.ROOT, "  %-58s p50 %.2f ms  p99 %.2f ms  max %.2f ms%n", f.getKey(), ms(h, 50), ms(h, 99),
                    h.getMaxValue() / 1000.0);
        }
        System.out.printf("  %-58s %d ms (the relay lag above is its distribution)%n", "Debezium poll.interval.ms (IM_RELAY_POLL_MS)", relayPollMs);

        System.out.println();
        System.out.println("Cursor writes (whole phase: warm-up + measured + drain; per push = per event frame written to a socket)");
        System.out.printf("%-9s %-70s %5s %8s %8s %8s %8s %9s %8s %8s %9s %9s %13s%n", "mode", "ack policy", "batch", "pushes", "acks",
                "cur.txns", "rows", "acks/push", "txn/push", "row/push", "relay rec", "rec/event", "acked p50/p99");
        for (Result r : results) {
            Counters c = r.c();
            double pu = Math.max(1, c.pushed());
            System.out.printf(Locale.ROOT, "%-9s %-70s %3dms %8d %8d %8d %8d %9.3f %8.3f %8.3f %9d %9.2f %13s%n", r.mode(), r.ackPolicy(),
                    r.ackBatchMs(), c.pushed(), c.acks(), c.txns(), c.rows(), c.acks() / pu, c.txns() / pu, c.rows() / pu,
                    c.relayPublished(), c.relayPublished() / Math.max(1, pu / (members - 1)),
                    String.format(Locale.ROOT, "<=%.0f/<=%.0f", c.acked().percentileAtMost(50), c.acked().percentileAtMost(99)));
        }
        System.out.println("relay rec: records the CDC relay published (events, reinstall resets; cursor moves are published by"
                + " the cursor service); rec/event: per event of the phase (pushes / recipients per event); acked: im.acked.latency, ack received -> acked written,"
                + " ms, upper bounds of the timer's buckets");

        System.out.println();
        Histogram busy = floors.values().stream().findFirst().orElse(null);
        Histogram longPoll = floors.values().stream().skip(1).findFirst().orElse(null);
        for (Result r : results) {
            if (busy != null) {
                System.out.printf(Locale.ROOT, "%-9s send->push p50 / kafka floor p50: %.1fx (busy poll), %.1fx (long poll);"
                                + " kafka->push p50 / kafka floor p50 (long poll): %.1fx (the path has 2 Kafka hops);"
                                + " relay lag p50 / poll interval: %.2fx%n",
                        r.mode(), ms(r.sendToPush(), 50) / ms(busy, 50),
                        longPoll == null ? Double.NaN : ms(r.sendToPush(), 50) / ms(longPoll, 50),
                        longPoll == null ? Double.NaN : ms(r.kafkaToPush(), 50) / ms(longPoll, 50),
                        r.relayLag().getTotalCount() == 0 ? Double.NaN : r.relayLag().getValueAtPercentile(50) / (double) relayPollMs);
            }
        }
        Result each = results.stream().filter(r -> r.mode().equals("raw-each")).findFirst().orElse(null);
        for (Result r : results) {
            if (each == null || r == each) continue;
            double a = each.c().txns() / (double) Math.max(1, each.c().pushed());
            double b = r.c().txns() / (double) Math.max(1, r.c().pushed());
            double ra = each.c().rows() / (double) Math.max(1, each.c().pushed());
            double rb = r.c().rows() / (double) Math.max(1, r.c().pushed());
            System.out.printf(Locale.ROOT, "%-9s vs raw-each (no coalescing): cursor transactions per push %.2fx fewer, rows per push %.2fx fewer%n",
                    r.mode(), a / b, ra / rb);
        }
    }

    private static String pMs(Histogram h) {
        return h.getTotalCount() == 0 ? "-" : h.getValueAtPercentile(50) + " / " + h.getValueAtPercentile(99);
    }
}
