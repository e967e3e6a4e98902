package im.gateway;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A gateway with Kafka needs the shared topics ({@code SharedTopics.create}, done by every way of
 * starting roles). Started before they exist, it must fail at once naming what is missing, not hang
 * for a minute in a consumer and then throw a timeout about a partition (what {@code CliIT} got when
 * an earlier test in its JVM had started the broker).
 */
@ExtendWith(ImStackExtension.class)
class GatewayStartIT {
    @Test
    void aGatewayStartedBeforeTheSharedTopicsExistFailsAtOnceNamingThem(TestStack stack) {
        stack.kafkaBootstrap();
        Settings s = stack.settings(Map.of(ConfigKeys.GATEWAY_PORT.name(), "0", ConfigKeys.ADMIN_TOKEN.name(), "admin-token-for-the-test"));
        String notices = TopicNames.from(s).notices();
        long t0 = System.nanoTime();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.none(), Clock.systemUTC()).close());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(e.getMessage().contains(notices) && e.getMessage().contains("SharedTopics"), e.getMessage());
        assertTrue(ms < 30_000, "failed after " + ms + " ms, not at once");
    }

    @Test
    void aTakenAdminPortFailsTheStartNamingItsSettingAndReleasesThePublicPort(TestStack stack) throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             ServerSocket probe = new ServerSocket(0)) {
            int publicPort = probe.getLocalPort();
            probe.close();
            Settings s = stack.settings(Map.of(ConfigKeys.GATEWAY_PORT.name(), Integer.toString(publicPort),
                    ConfigKeys.ADMIN_PORT.name(), Integer.toString(taken.getLocalPort()), ConfigKeys.ADMIN_TOKEN.name(), "admin-token-for-the-test"));
            s.optional(ConfigKeys.KAFKA_BOOTSTRAP).ifPresent(b -> SharedTopics.create(b, s));   // as the role runner does
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.none(), Clock.systemUTC()).close());
            assertTrue(e.getMessage().contains("127.0.0.1:" + taken.getLocalPort()) && e.getMessage().contains("IM_ADMIN_PORT"), e.getMessage());
            try (ServerSocket again = new ServerSocket(publicPort, 50, InetAddress.getLoopbackAddress())) {
                assertTrue(again.isBound(), "the public listener bound before the failure was released");
            }
        }
    }
}
