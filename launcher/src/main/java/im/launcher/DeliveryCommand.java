package im.launcher;

import im.delivery.route.DeliveryMain;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code im delivery}: one delivery node; add nodes to spread the partitions. */
@Command(name = "delivery", mixinStandardHelpOptions = true,
        description = "Run one delivery node (Kafka Streams) against IM_KAFKA_BOOTSTRAP.")
final class DeliveryCommand implements Callable<Integer>, Role {
    @Override
    public Integer call() throws InterruptedException {
        DeliveryMain.main(new String[0]);
        return 0;
    }
}
