package im.launcher;

import im.delivery.route.DeliveryNode;
import im.infra.role.RoleRunner;
import im.infra.role.Role;
import im.relay.CdcRelay;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * The commands that run one role of the platform each ({@code im gateway}, {@code im relay},
 * {@code im delivery}, {@code im sweeper}): all run their role through {@link RoleRunner}, exactly
 * as the role's own {@code *Main} does, and differ only in the role and the help text.
 */
final class RoleCommands {
    private RoleCommands() {}

    /** Runs {@link #role} until the process is stopped. */
    abstract static class OneRole implements Callable<Integer>, RoleCommand {
        private final Role<?> role;

        OneRole(Role<?> role) {
            this.role = role;
        }

        @Override
        public Integer call() throws InterruptedException {
            RoleRunner.run(role);
            return 0;
        }
    }

    @Command(name = "gateway", mixinStandardHelpOptions = true,
            description = "Run one gateway (WebSocket + admin API) against IM_PG_URL. Configuration by IM_* variables.")
    static final class Gateway extends OneRole {
        Gateway() {
            super(im.gateway.Gateway.role());
        }
    }

    @Command(name = "relay", mixinStandardHelpOptions = true,
            description = "Run the CDC relay (PostgreSQL -> Kafka) against IM_PG_URL and IM_KAFKA_BOOTSTRAP.")
    static final class Relay extends OneRole {
        Relay() {
            super(CdcRelay.role());
        }
    }

    @Command(name = "delivery", mixinStandardHelpOptions = true,
            description = "Run one delivery node (Kafka Streams) against IM_KAFKA_BOOTSTRAP.")
    static final class Delivery extends OneRole {
        Delivery() {
            super(DeliveryNode.role());
        }
    }

    @Command(name = "sweeper", mixinStandardHelpOptions = true,
            description = "Run the sweeper (Kafka Streams: hints for lagging devices) against IM_KAFKA_BOOTSTRAP.")
    static final class Sweeper extends OneRole {
        Sweeper() {
            super(im.sweeper.Sweeper.role());
        }
    }
}
