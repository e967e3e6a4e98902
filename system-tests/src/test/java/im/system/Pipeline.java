package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.testkit.Await;
import im.infra.ops.Metrics;
import im.delivery.route.DeliveryConfig;
import im.delivery.route.DeliveryNode;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.relay.CdcRelay;
import im.relay.RelayConfig;
import im.sweeper.Sweeper;
import im.sweeper.SweeperConfig;
import im.testkit.TestStack;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The whole delivery path in the test JVM against real PostgreSQL and Kafka: the CDC relay, one
 * or more delivery nodes and gateways, on the test's own database, slot and topic prefix.
 */
final class Pipeline implements AutoCloseable {
    final TestStack stack;
    final Settings settings;
    final TopicNames topics;
    final CdcRelay relay;
    final List<DeliveryNode> nodes = new ArrayList<>();
    final List<Gateway> gateways = new ArrayList<>();
    final List<Sweeper> sweepers = new ArrayList<>();

    Pipeline(TestStack stack, Map<String, String> extra) {
        this.stack = stack;
        if (!extra.containsKey(ConfigKeys.KAFKA_BOOTSTRAP.name())) stack.kafkaBootstrap();   // else: the test's own broker
        Map<String, String> m = roleSettings("s_" + stack.database());
        m.putAll(extra);
        settings = stack.settings(m);
        topics = TopicNames.from(settings);
        String bootstrap = settings.required(ConfigKeys.KAFKA_BOOTSTRAP);
        SharedTopics.create(bootstrap, settings);
        relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached());
        addNode();
    }

    /**
     * The settings every in-process pipeline of the tests runs with: its own relay slot, any free
     * gateway port, the fixtures' admin token, short heartbeats and leases so faults show quickly,
     * three partitions. A mutable copy, for the caller's additions.
     */
    static Map<String, String> roleSettings(String relaySlot) {
        return new HashMap<>(Map.of(
                ConfigKeys.RELAY_SLOT.name(), relaySlot,
                ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_TOKEN.name(), Fixture.ADMIN_TOKEN,
                ConfigKeys.GATEWAY_HEARTBEAT_MS.name(), "500",
                ConfigKeys.GATEWAY_LEASE_MS.name(), "3000",
                ConfigKeys.INTEREST_RENEW_MS.name(), "1000",
                ConfigKeys.PARTITIONS.name(), "3"));
    }

    DeliveryNode addNode() {
        DeliveryNode n = DeliveryNode.start(DeliveryConfig.from(settings), Metrics.detached());
        nodes.add(n);
        return n;
    }

    Sweeper addSweeper() {
        Sweeper s = Sweeper.start(SweeperConfig.from(settings), Metrics.detached());
        sweepers.add(s);
        return s;
    }

    Gateway addGateway(String id, String faults) {
        Settings s = settings.with(ConfigKeys.GATEWAY_ID, id);
        Gateway g = Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.parse(faults), Clock.systemUTC());
        gateways.add(g);
        return g;
    }

    static URI ws(Gateway g) {
        return URI.create("ws://127.0.0.1:" + g.port() + "/ws");
    }

    /** A Java SDK client of {@code g} with its store in {@code dir}, connected. */
    static im.client.ImClient client(Gateway g, String token, java.nio.file.Path dir) throws Exception {
        im.client.ImClient c = im.client.ImClient.open(im.client.api.ClientOptions.of(ws(g), token, dir));
        c.connect();
        return c;
    }

    void awaitRunning() {
        Await.until(Duration.ofSeconds(60), () -> relay.isActive() && nodes.stream().allMatch(DeliveryNode::isRunning)
                        && sweepers.stream().allMatch(Sweeper::isRunning),
                "relay active, delivery nodes and sweepers running");
    }

    @Override
    public void close() {
        gateways.forEach(Gateway::close);
        sweepers.forEach(Sweeper::close);
        nodes.forEach(DeliveryNode::close);
        relay.close();
    }
}
