package im.launcher;

import im.gateway.GatewayMain;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code im gateway}: one gateway against the PostgreSQL of IM_PG_URL. */
@Command(name = "gateway", mixinStandardHelpOptions = true,
        description = "Run one gateway (WebSocket + admin API) against IM_PG_URL. Configuration by IM_* variables.")
final class GatewayCommand implements Callable<Integer>, Role {
    @Override
    public Integer call() throws InterruptedException {
        GatewayMain.main(new String[0]);
        new java.util.concurrent.CountDownLatch(1).await();   // runs until the shutdown hook stops it
        return 0;
    }
}
