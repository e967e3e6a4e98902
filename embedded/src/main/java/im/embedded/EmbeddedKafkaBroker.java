package im.embedded;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node KRaft Kafka broker (combined broker and controller) running inside this JVM
 * via {@link KafkaRaftServer}, listening on free 127.0.0.1 ports. Its storage lives in
 * {@code dataDir/kafka-logs}, formatted on first start; the data directory is deleted on
 * {@link #close()} unless the caller asked to keep it. This is the fast broker for integration
 * tests and local runs; use {@link KafkaBrokerProcess} when a test must kill the broker.
 */
public final class EmbeddedKafkaBroker extends LocalBroker {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafkaBroker.class);

    private final KafkaRaftServer server;
    private final String bootstrap;

    private EmbeddedKafkaBroker(KafkaRaftServer server, Path dataDir, boolean deleteOnClose, String bootstrap) {
        super(dataDir, deleteOnClose);
        this.server = server;
        this.bootstrap = bootstrap;
    }

    /** Starts a broker whose data directory is deleted on close; blocks until it is ready (60 s). */
    public static EmbeddedKafkaBroker start(Path dataDir) {
        return start(dataDir, false);
    }

    /**
     * Starts a broker storing its data in {@code dataDir} (created if missing) and blocks until it
     * answers {@code describeCluster}, or throws {@link BrokerStartException} after 60 s.
     *
     * @param keepData keep {@code dataDir} on close (e.g. to inspect segments after a test)
     */
    public static EmbeddedKafkaBroker start(Path dataDir, boolean keepData) {
        return start(dataDir, 0, keepData);
    }

    /**
     * As {@link #start(Path, boolean)}, on a fixed client port (its controller listens on
     * {@code port + 1}); port 0 picks free ports. A kept data directory must be restarted on the
     * same ports.
     */
    public static EmbeddedKafkaBroker start(Path dataDir, int fixedPort, boolean keepData) {
        return start(dataDir, fixedPort, keepData, null, Map.of());
    }

    /**
     * A broker (data deleted on close) that only SCRAM users can use: its one client listener
     * speaks SASL_PLAINTEXT with SCRAM-SHA-256, and the StandardAuthorizer allows nothing that no
     * ACL allows except to {@code superUser} (the user the node itself authenticates as).
     * {@code users} (name to password, {@code superUser} among them) are created when the storage
     * is formatted. A client needs {@link #scramClientProperties} of one of them.
     */
    public static EmbeddedKafkaBroker startWithScram(Path dataDir, Map<String, String> users, String superUser) {
        if (!users.containsKey(superUser)) throw new IllegalArgumentException("no password for " + superUser);
        return start(dataDir, 0, false, superUser, users);
    }

    /** The client settings of SCRAM user {@code user}: what IM_KAFKA_CONFIG_FILE holds for a broker of {@link #startWithScram}. */
    public static Map<String, String> scramClientProperties(String user, String password) {
        return Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", BrokerSettings.SCRAM,
                "sasl.jaas.config", BrokerSettings.scramJaas(user, password));
    }

    private static EmbeddedKafkaBroker start(Path dataDir, int fixedPort, boolean keepData, String superUser, Map<String, String> users) {
        Objects.requireNonNull(dataDir, "dataDir");
        Path logDir = dataDir.resolve(BrokerSettings.LOG_DIR_NAME);
        int port = fixedPort > 0 ? fixedPort : BrokerSettings.freePort();
        int controllerPort = fixedPort > 0 ? fixedPort + 1 : BrokerSettings.freePort();
        Properties props = BrokerSettings.serverProperties(logDir, port, controllerPort);
        Map<String, String> client = Map.of();
        if (superUser != null) {
            props = BrokerSettings.withScram(props, port, superUser, users.get(superUser));
            client = scramClientProperties(superUser, users.get(superUser));
        }
        BrokerSettings.formatIfNeeded(logDir, users);
        String bootstrap = BrokerSettings.HOST + ":" + port;

        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props), Time.SYSTEM);
        EmbeddedKafkaBroker broker = new EmbeddedKafkaBroker(server, dataDir, !keepData, bootstrap);
        try {
            server.startup();
            BrokerSettings.awaitReady(bootstrap, BrokerSettings.NODE_ID, BrokerSettings.READY_DEADLINE, () -> null, client);
        } catch (RuntimeException e) {
            broker.close();
            throw e instanceof BrokerStartException ? e
                    : new BrokerStartException("embedded Kafka broker failed to start in " + dataDir + ": " + e, e);
        }
        log.info("embedded Kafka broker ready at {} (data {})", bootstrap, dataDir);
        return broker;
    }

    @Override
    public String bootstrapServers() {
        return bootstrap;
    }

    /** The directory holding this broker's storage. */
    public Path dataDir() {
        return dataDir;
    }

    @Override
    void stop() {
        server.shutdown();
        server.awaitShutdown();
    }

    @Override
    public String toString() {
        return "EmbeddedKafkaBroker[" + bootstrap + ", " + dataDir + "]";
    }
}
