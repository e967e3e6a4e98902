package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigKeys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The two TLS overlays of the compose stack, checked against docker-compose.yml as compose would
 * merge them (no engine needed): {@code ops/tls/compose.tls.yml} (the gateways serve TLS
 * themselves) and {@code ops/proxy/compose.proxy.yml} (nginx in front; {@code ProxyIT} runs its
 * nginx.conf for real). Each names only services of the stack, covers every gateway, and agrees
 * with the gateways' ports.
 */
class ComposeOverlaysTest {
    private static Path root;
    private static Map<String, Object> services;
    /** Gateway service → its merged environment in docker-compose.yml. */
    private static final Map<String, Map<String, String>> GATEWAYS = new TreeMap<>();

    @BeforeAll
    static void read() throws IOException {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("docker-compose.yml"))) dir = dir.getParent();
        if (dir == null) throw new IllegalStateException("no docker-compose.yml above " + Path.of("").toAbsolutePath());
        root = dir;
        services = map(load(root.resolve("docker-compose.yml")).get("services"));
        services.forEach((name, svc) -> {
            if (List.of("gateway").equals(map(svc).get("command"))) GATEWAYS.put(name, environment(map(svc)));
        });
        assertTrue(GATEWAYS.size() >= 2, "gateways of docker-compose.yml: " + GATEWAYS.keySet());
    }

    @Test
    void theGatewaysOwnTlsOverlayCoversEveryGatewayAndChecksHealthOverHttps() throws IOException {
        Map<String, Object> overlay = map(load(root.resolve("ops/tls/compose.tls.yml")).get("services"));
        assertEquals(GATEWAYS.keySet(), overlay.keySet(), "the overlay's services are the stack's gateways");
        for (String name : GATEWAYS.keySet()) {
            Map<String, Object> svc = map(overlay.get(name));
            Map<String, String> env = environment(svc);
            String mountedAt = null;
            for (Object v : list(svc.get("volumes"))) {
                String[] parts = String.valueOf(v).split(":");
                assertTrue(Files.isDirectory(root.resolve(parts[0])), name + ": mounts " + parts[0] + ", which is not a directory of the repository");
                assertTrue(String.valueOf(v).endsWith(":ro"), name + ": certificates are mounted read-only: " + v);
                mountedAt = parts[1];
            }
            for (String key : List.of(ConfigKeys.TLS_CERT.name(), ConfigKeys.TLS_KEY.name())) {
                assertTrue(env.containsKey(key) && mountedAt != null && env.get(key).startsWith(mountedAt + "/"),
                        name + ": " + key + " must name a file of the mounted directory " + mountedAt + ", is " + env.get(key));
            }
            String adminPort = GATEWAYS.get(name).getOrDefault(ConfigKeys.ADMIN_PORT.name(), ConfigKeys.ADMIN_PORT.defaultValue());
            List<?> test = list(map(svc.get("healthcheck")).get("test"));
            assertTrue(test.contains("https://127.0.0.1:" + adminPort + "/readyz"),
                    name + ": the health check must ask the admin listener over https, is " + test);
        }
    }

    @Test
    void theProxyOverlayForwardsToEveryGatewayOnItsPublicPort() throws IOException {
        Map<String, Object> overlay = map(load(root.resolve("ops/proxy/compose.proxy.yml")).get("services"));
        assertEquals(Set.of("proxy"), overlay.keySet(), "the overlay adds the proxy and changes no service of the stack");
        Map<String, Object> proxy = map(overlay.get("proxy"));
        Set<String> waitsFor = new TreeSet<>(map(proxy.get("depends_on")).keySet());
        assertEquals(GATEWAYS.keySet(), waitsFor, "the proxy waits for every gateway");
        String conf = null;
        for (Object v : list(proxy.get("volumes"))) {
            String source = String.valueOf(v).split(":")[0];
            assertTrue(Files.exists(root.resolve(source)), "proxy: mounts " + source + ", which is not in the repository");
            if (source.endsWith("nginx.conf")) conf = Files.readString(root.resolve(source));
        }
        assertTrue(conf != null, "proxy: mounts no nginx.conf");
        List<String> upstream = new ArrayList<>();
        for (String line : conf.split("\n")) {
            String t = line.trim();
            if (t.startsWith("server ") && t.contains(":")) upstream.add(t.split("\\s+")[1]);
        }
        List<String> expected = new ArrayList<>();
        GATEWAYS.forEach((name, env) -> expected.add(name + ":" + env.getOrDefault(ConfigKeys.GATEWAY_PORT.name(), ConfigKeys.GATEWAY_PORT.defaultValue())));
        assertEquals(expected, upstream, "nginx.conf's upstream is every gateway's public listener (never its admin listener)");
    }

    private static Map<String, Object> load(Path file) throws IOException {
        LoaderOptions opts = new LoaderOptions();
        opts.setAllowDuplicateKeys(false);
        return map(new Yaml(new SafeConstructor(opts)).load(Files.readString(file)));
    }

    /** A service's environment with the shared blocks merged (SnakeYAML resolves {@code <<}). */
    private static Map<String, String> environment(Map<String, Object> svc) {
        Map<String, String> env = new TreeMap<>();
        map(svc.get("environment")).forEach((k, v) -> env.put(k, String.valueOf(v)));
        return env;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return o instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    private static List<?> list(Object o) {
        return o instanceof List<?> l ? l : List.of();
    }
}
