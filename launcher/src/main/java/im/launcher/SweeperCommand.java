package im.launcher;

import im.sweeper.SweeperMain;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code im sweeper}: one sweeper instance (more instances share the partitions). */
@Command(name = "sweeper", mixinStandardHelpOptions = true,
        description = "Run the sweeper (Kafka Streams: hints for lagging devices) against IM_KAFKA_BOOTSTRAP.")
final class SweeperCommand implements Callable<Integer>, Role {
    @Override
    public Integer call() throws InterruptedException {
        SweeperMain.main(new String[0]);
        return 0;
    }
}
