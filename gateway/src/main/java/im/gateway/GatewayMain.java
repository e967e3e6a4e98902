package im.gateway;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.ops.Metrics;
import java.time.Clock;

/**
 * Runs one gateway against the PostgreSQL named by IM_PG_URL; its ops endpoints ({@code /healthz},
 * {@code /readyz}, {@code /metrics}) are on the gateway's own port. Prints
 * {@code IM_READY gateway port=<port>} on stdout once it accepts connections (tests and scripts
 * wait for that line).
 */
public final class GatewayMain {
    private GatewayMain() {}

    public static void main(String[] args) {
        Settings s = Settings.fromEnvironment();
        GatewayConfig cfg = GatewayConfig.from(s);
        Faults faults = Faults.parse(s.string(ConfigKeys.FAULT));
        Database db = Database.open(DbConfig.from(s), cfg.gatewayId());
        Database.migrate(db.dataSource());
        Gateway gw = new Gateway(cfg, db.dataSource(), faults, Clock.systemUTC(), Metrics.newRegistry()).start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            gw.close();
            db.close();
        }, "gateway-shutdown"));
        System.out.println("IM_READY gateway port=" + gw.port() + " id=" + gw.id());
        System.out.flush();
    }
}
