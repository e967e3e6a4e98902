package im.gateway;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.role.RoleRuntime;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Clock;

/**
 * A gateway as a role: opens its pool on the PostgreSQL of IM_PG_URL, applies the migrations and
 * serves WebSocket and the web client on IM_GATEWAY_PORT, the admin API and its own ops endpoints
 * on IM_ADMIN_PORT. Ready while the database answers.
 */
public final class GatewayRole implements RoleRuntime {
    @Override
    public String name() {
        return "gateway";
    }

    @Override
    public Started start(Settings s, PrometheusMeterRegistry meters) {
        GatewayConfig cfg = GatewayConfig.from(s);
        Faults faults = Faults.parse(s.string(ConfigKeys.FAULT));
        Database db = Database.open(DbConfig.from(s), cfg.gatewayId());
        try {
            Database.migrate(db.dataSource());
            return new Started(new Gateway(cfg, db.dataSource(), faults, Clock.systemUTC(), meters).start(), db);
        } catch (RuntimeException e) {
            db.close();
            throw e;
        }
    }

    /** A started gateway and its pool; closing stops the gateway, then the pool. */
    public record Started(Gateway gateway, Database db) implements Running {
        @Override
        public boolean isReady() {
            return gateway.isReady();
        }

        @Override
        public String readyDetail() {
            return "port=" + gateway.port() + " admin=" + gateway.adminPort() + " id=" + gateway.id();
        }

        @Override
        public boolean servesOps() {
            return true;
        }

        @Override
        public void close() {
            gateway.close();
            db.close();
        }
    }
}
