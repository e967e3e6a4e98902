package im.relay;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * Runs one CDC relay (active, or standby until the active one dies) and its ops server
 * ({@code /healthz}, {@code /readyz}, {@code /metrics} on IM_OPS_PORT). Prints
 * {@code IM_READY relay} on stdout once started.
 */
public final class RelayMain {
    private RelayMain() {}

    public static void main(String[] args) throws InterruptedException {
        Settings s = Settings.fromEnvironment();
        RelayConfig cfg = RelayConfig.from(s);
        TopicNames topics = TopicNames.from(s);
        Topics.create(cfg.kafkaBootstrap(), topics.conversationKeyed(), s.get(ConfigKeys.PARTITIONS));
        PrometheusMeterRegistry meters = Metrics.newRegistry();
        CdcRelay relay = new CdcRelay(cfg, topics, meters).start();
        OpsServer ops = OpsServer.start(OpsConfig.from(s), meters, relay::isReady);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            ops.close();
            relay.close();
        }, "relay-shutdown"));
        System.out.println("IM_READY relay slot=" + cfg.slot() + " ops=" + ops.url());
        System.out.flush();
        new java.util.concurrent.CountDownLatch(1).await();   // the relay's threads are daemons: keep the JVM
    }
}
