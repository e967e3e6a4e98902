package im.reliability;

import im.delivery.route.DeliveryMain;
import im.embedded.EmbeddedPg;
import im.embedded.KafkaCluster;
import im.gateway.GatewayMain;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.kafka.Replication;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.relay.RelayMain;
import im.sweeper.SweeperMain;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The whole platform for a campaign, every part in its own process so the nemesis can kill it:
 * embedded PostgreSQL ({@link StackPg}: one server, data kept so it can be crashed and restarted
 * with WAL recovery, or a primary + synchronous standby on a multi-host URL), Kafka
 * as a KRaft cluster of child JVMs (one node by default; with more, every topic is replicated
 * min(3, nodes) times), and child JVMs for two CDC relays (one active, one standby on the advisory lock), two
 * delivery nodes, one sweeper and two gateways on fixed ports (clients reconnect to the URI they
 * know). Roles are the production main classes ({@code RelayMain}, {@code DeliveryMain},
 * {@code SweeperMain}, {@code GatewayMain}) configured by IM_* variables only. Logs go to
 * {@code <dir>/logs/<role>-<generation>.log}.
 */
final class Stack implements AutoCloseable {
    static final String ADMIN_TOKEN = "campaign-admin-token-0123456789";
    static final int PARTITIONS = 3;
    static final int RELAYS = 2;
    static final int NODES = 2;
    static final int GATEWAYS = 2;
    private static final long READY_MS = 180_000;

    final Path dir;
    static final String SLOT = "s_campaign";
    final StackPg pg;
    final Database db;
    final KafkaCluster kafka;
    final Settings settings;
    final TopicNames topics;
    final int[] gatewayPorts = new int[GATEWAYS];
    /** Each gateway's admin listener (IM_ADMIN_PORT), fixed across its restarts like its public port. */
    final int[] adminPorts = new int[GATEWAYS];
    private final AtomicInteger generation = new AtomicInteger();

    final RoleProcess[] relays = new RoleProcess[RELAYS];
    final RoleProcess[] nodes = new RoleProcess[NODES];
    final RoleProcess[] gateways = new RoleProcess[GATEWAYS];
    volatile RoleProcess sweeper;
    /** Frames dropped by fault rules of gateways that are gone, per point. */
    private final Map<String, Long> droppedByGone = new java.util.TreeMap<>();
    /** Ctrl-C or a failed start: stops what runs, PostgreSQL last (the embedded server has no hook of its own). */
    private final Thread exitHook = new Thread(this::close, "campaign-stack-shutdown");
    private boolean closed;

    Stack(Path dir, int kafkaNodes, boolean pgStandby) {
        this.dir = dir;
        pg = StackPg.start(dir.resolve("pg"), pgStandby, "campaign");
        Runtime.getRuntime().addShutdownHook(exitHook);
        db = Database.open(pg.dbConfig(16), "campaign");
        Database.migrate(db.dataSource());
        kafka = KafkaCluster.start(dir.resolve("kafka"), kafkaNodes, true);
        for (int i = 0; i < GATEWAYS; i++) {
            gatewayPorts[i] = freePort();
            adminPorts[i] = freePort();
        }
        Map<String, String> m = new HashMap<>();
        m.put(ConfigKeys.PG_URL.name(), pg.jdbcUrl());
        m.put(ConfigKeys.PG_USER.name(), EmbeddedPg.USER);
        m.put(ConfigKeys.PG_PASSWORD.name(), EmbeddedPg.PASSWORD);
        m.put(ConfigKeys.PG_POOL_SIZE.name(), "8");
        m.put(ConfigKeys.KAFKA_BOOTSTRAP.name(), kafka.bootstrapServers());
        m.put(ConfigKeys.REPLICATION_FACTOR.name(), String.valueOf(Math.min(3, kafkaNodes)));
        m.put(ConfigKeys.TOPIC_PREFIX.name(), "camp.");
        m.put(ConfigKeys.RELAY_SLOT.name(), SLOT);
        m.put(ConfigKeys.PARTITIONS.name(), String.valueOf(PARTITIONS));
        m.put(ConfigKeys.ADMIN_TOKEN.name(), ADMIN_TOKEN);
        m.put(ConfigKeys.GATEWAY_HEARTBEAT_MS.name(), "500");
        m.put(ConfigKeys.GATEWAY_LEASE_MS.name(), "3000");
        m.put(ConfigKeys.INTEREST_RENEW_MS.name(), "1000");
        m.put(ConfigKeys.SWEEP_MS.name(), "500");
        m.put(ConfigKeys.HINT_BACKOFF_MS.name(), "1000");
        m.put(ConfigKeys.WORKER_THREADS.name(), "8");
        m.put(ConfigKeys.OPS_PORT.name(), "0");
        settings = Settings.of(m);
        topics = TopicNames.from(settings);
        SharedTopics.create(kafka.bootstrapServers(), topics, PARTITIONS, Replication.from(settings));
        // Start everything at once, then wait: the JVMs boot in parallel.
        List<Runnable> waits = new ArrayList<>();
        for (int i = 0; i < RELAYS; i++) waits.add(launchRelay(i));
        for (int i = 0; i < NODES; i++) waits.add(launchNode(i, "IM_RUNNING"));
        waits.add(launchSweeper("IM_RUNNING"));
        for (int i = 0; i < GATEWAYS; i++) waits.add(launchGateway(i, ""));
        waits.forEach(Runnable::run);
    }

    URI ws(int gateway) {
        return URI.create("ws://127.0.0.1:" + gatewayPorts[gateway] + "/ws");
    }

    private Runnable launch(String role, Class<?> main, Map<String, String> extra, String readyPrefix, Consumer<RoleProcess> set) {
        Map<String, String> env = new HashMap<>(settings.explicitValues());
        env.putAll(extra);
        String name = role + "-" + generation.incrementAndGet();
        CompletableFuture<Void> ready = new CompletableFuture<>();
        RoleProcess p = RoleProcess.start(name, main, env, dir.resolve("logs").resolve(name + ".log"), readyPrefix, ready);
        set.accept(p);
        return () -> RoleProcess.awaitReady(ready, name, READY_MS);
    }

    private Runnable launchRelay(int i) {
        return launch("relay" + i, RelayMain.class, Map.of(), "IM_READY", p -> relays[i] = p);
    }

    private Runnable launchNode(int i, String readyPrefix) {
        return launch("delivery" + i, DeliveryMain.class, Map.of(), readyPrefix, p -> nodes[i] = p);
    }

    private Runnable launchSweeper(String readyPrefix) {
        return launch("sweeper", SweeperMain.class, Map.of(), readyPrefix, p -> sweeper = p);
    }

    /** A gateway with a new id (as a restarted process gets) on its fixed port, with the given IM_FAULT rules. */
    private Runnable launchGateway(int i, String faults) {
        Map<String, String> extra = new HashMap<>();
        extra.put(ConfigKeys.GATEWAY_PORT.name(), String.valueOf(gatewayPorts[i]));
        extra.put(ConfigKeys.ADMIN_PORT.name(), String.valueOf(adminPorts[i]));
        extra.put(ConfigKeys.GATEWAY_ID.name(), "gw" + i + "-" + (generation.get() + 1));
        if (!faults.isEmpty()) extra.put(ConfigKeys.FAULT.name(), faults);
        return launch("gateway" + i, GatewayMain.class, extra, "IM_READY", p -> gateways[i] = p);
    }

    void restartRelay(int i) {
        launchRelay(i).run();
    }

    void restartNode(int i) {
        launchNode(i, "IM_READY").run();
    }

    void restartSweeper() {
        launchSweeper("IM_READY").run();
    }

    /** Starts gateway {@code i} again; retries while its port is still held by the dying process. */
    void restartGateway(int i, String faults) {
        RuntimeException last = null;
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                launchGateway(i, faults).run();
                return;
            } catch (RuntimeException e) {
                last = e;
                LockSupport.parkNanos(500_000_000L);
            }
        }
        throw new IllegalStateException("gateway " + i + " did not start on port " + gatewayPorts[i], last);
    }

    /** Kills gateway {@code i} (kill -9, or SIGTERM when {@code graceful}) and keeps its drop counts. */
    void stopGateway(int i, boolean graceful) {
        RoleProcess g = gateways[i];
        if (graceful) g.stop();
        else g.kill();
        synchronized (droppedByGone) {
            g.dropped().forEach((k, v) -> droppedByGone.merge(k, v, Long::sum));
        }
    }

    /** Frames dropped by gateway fault rules so far, per fault point. */
    Map<String, Long> droppedFrames() {
        Map<String, Long> m;
        synchronized (droppedByGone) {
            m = new java.util.TreeMap<>(droppedByGone);
        }
        for (RoleProcess g : gateways) {
            if (g != null) g.dropped().forEach((k, v) -> m.merge(k, v, Long::sum));
        }
        return m;
    }

    static void await(long millis, BooleanSupplier cond, String what) {
        long deadline = System.currentTimeMillis() + millis;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not within " + millis + " ms: " + what);
            LockSupport.parkNanos(50_000_000L);
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            System.err.println("closing: " + e);
        }
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            Runtime.getRuntime().removeShutdownHook(exitHook);
        } catch (IllegalStateException shuttingDown) {
            // this is the hook running
        }
        for (RoleProcess g : gateways) if (g != null) quietly(g::kill);
        if (sweeper != null) quietly(sweeper::kill);
        for (RoleProcess n : nodes) if (n != null) quietly(n::kill);
        for (RoleProcess r : relays) if (r != null) quietly(r::kill);
        if (kafka != null) quietly(kafka::close);   // null: the start failed before it (the hook closes what there is)
        if (db != null) quietly(db::close);
        quietly(pg::close);
    }
}
