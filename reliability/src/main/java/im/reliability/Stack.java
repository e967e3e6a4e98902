package im.reliability;

import im.delivery.route.DeliveryConfig;
import im.delivery.route.DeliveryNode;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.EmbeddedPg;
import im.infra.fault.Faults;
import im.infra.kafka.KafkaBrokerProcess;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.ingest.relay.CdcRelay;
import im.ingest.relay.RelayConfig;
import im.sweeper.Sweeper;
import im.sweeper.SweeperConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The whole platform for a campaign: its own embedded PostgreSQL (data kept, so it can be crashed
 * and restarted with WAL recovery), a Kafka broker in its own JVM (kill -9 and restart on the same
 * port and data), and, in this JVM, the CDC relay, one delivery node, one sweeper and one gateway.
 * The in-process roles are restarted by {@code close()} and a new instance; the gateway comes back
 * on the same port so clients reconnect to the URI they know.
 */
final class Stack implements AutoCloseable {
    static final String ADMIN_TOKEN = "campaign-admin-token-0123456789";
    static final int PARTITIONS = 3;

    final Path dir;
    final EmbeddedPg pg;
    final Database db;
    final KafkaBrokerProcess broker;
    final Settings settings;
    final TopicNames topics;
    final int gatewayPort;
    private int gatewayGeneration;

    volatile CdcRelay relay;
    volatile DeliveryNode node;
    volatile Sweeper sweeper;
    volatile Gateway gateway;

    Stack(Path dir) {
        this.dir = dir;
        pg = EmbeddedPg.start(dir.resolve("pg"), 0, true);
        pg.createDatabase("campaign");
        db = Database.open(pg.dbConfig("campaign", 16), "campaign");
        Database.migrate(db.dataSource());
        broker = KafkaBrokerProcess.start(dir.resolve("kafka"), 0, true);
        gatewayPort = freePort();
        Map<String, String> m = new HashMap<>();
        m.put(ConfigKeys.PG_URL.name(), pg.jdbcUrl("campaign"));
        m.put(ConfigKeys.PG_USER.name(), EmbeddedPg.USER);
        m.put(ConfigKeys.PG_PASSWORD.name(), EmbeddedPg.PASSWORD);
        m.put(ConfigKeys.PG_POOL_SIZE.name(), "8");
        m.put(ConfigKeys.KAFKA_BOOTSTRAP.name(), broker.bootstrapServers());
        m.put(ConfigKeys.TOPIC_PREFIX.name(), "camp.");
        m.put(ConfigKeys.RELAY_SLOT.name(), "s_campaign");
        m.put(ConfigKeys.PARTITIONS.name(), String.valueOf(PARTITIONS));
        m.put(ConfigKeys.GATEWAY_PORT.name(), String.valueOf(gatewayPort));
        m.put(ConfigKeys.ADMIN_TOKEN.name(), ADMIN_TOKEN);
        m.put(ConfigKeys.GATEWAY_HEARTBEAT_MS.name(), "500");
        m.put(ConfigKeys.GATEWAY_LEASE_MS.name(), "3000");
        m.put(ConfigKeys.SWEEP_MS.name(), "500");
        m.put(ConfigKeys.HINT_BACKOFF_MS.name(), "1000");
        settings = Settings.of(m);
        topics = TopicNames.from(settings);
        Topics.create(broker.bootstrapServers(), topics.conversationKeyed(), PARTITIONS);
        Topics.create(broker.bootstrapServers(), topics.singlePartition(), 1);
        startRelay();
        startNode();
        startSweeper();
        startGateway();
        await(120_000, () -> relay.isActive() && node.isRunning() && sweeper.isRunning(),
                "relay active, delivery node and sweeper running");
    }

    URI ws() {
        return URI.create("ws://127.0.0.1:" + gatewayPort + "/ws");
    }

    void startRelay() {
        relay = new CdcRelay(RelayConfig.from(settings), topics).start();
    }

    void startNode() {
        node = new DeliveryNode(DeliveryConfig.from(settings)).start();
    }

    void startSweeper() {
        sweeper = new Sweeper(SweeperConfig.from(settings)).start();
    }

    /** A new gateway (new id, as a restarted process would get) on the campaign's fixed port; retries while the port is still held. */
    void startGateway() {
        String id = "gw-" + (++gatewayGeneration);
        Settings s = settings.with(ConfigKeys.GATEWAY_ID, id);
        RuntimeException last = null;
        for (int attempt = 0; attempt < 50; attempt++) {
            Gateway g = new Gateway(GatewayConfig.from(s), db.dataSource(), Faults.none(), Clock.systemUTC());
            try {
                gateway = g.start();
                return;
            } catch (RuntimeException e) {   // e.g. the port is not free yet
                last = e;
                try {
                    g.close();
                } catch (RuntimeException ignored) {
                    // partially started
                }
                LockSupport.parkNanos(200_000_000L);
            }
        }
        throw new IllegalStateException("gateway did not start on port " + gatewayPort, last);
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
    public void close() {
        if (gateway != null) quietly(gateway::close);
        if (sweeper != null) quietly(sweeper::close);
        if (node != null) quietly(node::close);
        if (relay != null) quietly(relay::close);
        quietly(broker::close);
        quietly(db::close);
        quietly(pg::close);
    }
}
