package im.sweeper;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.Topics;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.CountDownLatch;

/**
 * Runs one sweeper instance and its ops server ({@code /healthz}, {@code /readyz} = Streams
 * RUNNING, {@code /metrics} on IM_OPS_PORT). Prints {@code IM_READY sweeper} once started.
 */
public final class SweeperMain {
    private SweeperMain() {}

    public static void main(String[] args) throws InterruptedException {
        Settings s = Settings.fromEnvironment();
        SweeperConfig cfg = SweeperConfig.from(s);
        Topics.create(cfg.bootstrap(), cfg.topics().conversationKeyed(), s.get(ConfigKeys.PARTITIONS));
        Topics.create(cfg.bootstrap(), cfg.topics().singlePartition(), 1);
        PrometheusMeterRegistry meters = Metrics.newRegistry();
        Sweeper sweeper = new Sweeper(cfg, meters).start();
        OpsServer ops = OpsServer.start(OpsConfig.from(s), meters, sweeper::isRunning);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            ops.close();
            sweeper.close();
        }, "sweeper-shutdown"));
        System.out.println("IM_READY sweeper ops=" + ops.url());
        System.out.flush();
        // Tests and scripts wait for this second line: state restored, tasks assigned, punctuating.
        while (!sweeper.isRunning()) java.util.concurrent.locks.LockSupport.parkNanos(50_000_000);
        System.out.println("IM_RUNNING sweeper");
        System.out.flush();
        new CountDownLatch(1).await();
    }
}
