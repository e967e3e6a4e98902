package im.delivery.route;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.Topics;
import java.util.concurrent.CountDownLatch;

/** Runs one delivery node. Prints {@code IM_READY delivery} once started. */
public final class DeliveryMain {
    private DeliveryMain() {}

    public static void main(String[] args) throws InterruptedException {
        Settings s = Settings.fromEnvironment();
        DeliveryConfig cfg = DeliveryConfig.from(s);
        Topics.create(cfg.bootstrap(), cfg.topics().conversationKeyed(), s.intValue(ConfigKeys.PARTITIONS, 1, 10_000));
        Topics.create(cfg.bootstrap(), cfg.topics().singlePartition(), 1);
        DeliveryNode node = new DeliveryNode(cfg).start();
        Runtime.getRuntime().addShutdownHook(new Thread(node::close, "delivery-shutdown"));
        System.out.println("IM_READY delivery");
        System.out.flush();
        // Tests and scripts wait for this second line: tasks assigned, stores restored.
        while (!node.isRunning()) java.util.concurrent.locks.LockSupport.parkNanos(50_000_000);
        System.out.println("IM_RUNNING delivery");
        System.out.flush();
        new CountDownLatch(1).await();
    }
}
