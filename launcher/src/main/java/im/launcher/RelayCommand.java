package im.launcher;

import im.relay.RelayMain;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code im relay}: one CDC relay (active, or standby until the active one dies). */
@Command(name = "relay", mixinStandardHelpOptions = true,
        description = "Run the CDC relay (PostgreSQL -> Kafka) against IM_PG_URL and IM_KAFKA_BOOTSTRAP.")
final class RelayCommand implements Callable<Integer>, Role {
    @Override
    public Integer call() throws InterruptedException {
        RelayMain.main(new String[0]);
        return 0;
    }
}
