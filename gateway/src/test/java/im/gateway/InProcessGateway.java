package im.gateway;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.testkit.TestStack;
import java.net.URI;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/** A gateway in the test JVM on a free port, against the test's database. */
public final class InProcessGateway implements AutoCloseable {
    public final Gateway gateway;

    public InProcessGateway(TestStack stack, String faults, Map<String, String> extra) {
        Map<String, String> m = new HashMap<>(extra);
        m.put(ConfigKeys.GATEWAY_PORT.name(), "0");
        m.put(ConfigKeys.ADMIN_TOKEN.name(), Fixture.ADMIN_TOKEN);
        Settings s = stack.settings(m);
        s.optional(ConfigKeys.KAFKA_BOOTSTRAP).ifPresent(bootstrap -> SharedTopics.create(bootstrap, s));   // as the role runner does
        gateway = Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.parse(faults), Clock.systemUTC());
    }

    public InProcessGateway(TestStack stack) {
        this(stack, "", Map.of());
    }

    public URI ws() {
        return URI.create("ws://127.0.0.1:" + gateway.port() + "/ws");
    }

    public URI http(String path) {
        return URI.create("http://127.0.0.1:" + gateway.port() + path);
    }

    /** A path on the admin listener: /admin/..., /healthz, /readyz, /metrics. */
    public URI admin(String path) {
        return URI.create("http://127.0.0.1:" + gateway.adminPort() + path);
    }

    public int port() {
        return gateway.port();
    }

    @Override
    public void close() {
        gateway.close();
    }
}
