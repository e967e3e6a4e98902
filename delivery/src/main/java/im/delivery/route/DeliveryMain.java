package im.delivery.route;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.Topics;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.CountDownLatch;

/**
 * Runs one delivery node and its ops server ({@code /healthz}, {@code /readyz} = Streams RUNNING,
 * {@code /metrics} on IM_OPS_PORT). Prints {@code IM_READY delivery} once started.
 */
public final class DeliveryMain {
    private DeliveryMain() {}

    public static void main(String[] args) throws InterruptedException {
        Settings s = Settings.fromEnvironment();
        DeliveryConfig cfg = DeliveryConfig.from(s);
        Topics.create(cfg.bootstrap(), cfg.topics().conversationKeyed(), s.get(ConfigKeys.PARTITIONS));
        Topics.create(cfg.bootstrap(), cfg.topics().singlePartition(), 1);
        PrometheusMeterRegistry meters = Metrics.newRegistry();
        DeliveryNode node = new DeliveryNode(cfg, meters).start();
        OpsServer ops = OpsServer.start(OpsConfig.from(s), meters, node::isRunning);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            ops.close();
            node.close();
        }, "delivery-shutdown"));
        System.out.println("IM_READY delivery ops=" + ops.url());
        System.out.flush();
        // Tests and scripts wait for this second line: tasks assigned, stores restored.
        while (!node.isRunning()) java.util.concurrent.locks.LockSupport.parkNanos(50_000_000);
        System.out.println("IM_RUNNING delivery");
        System.out.flush();
        new CountDownLatch(1).await();
    }
}
