package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code docker-compose.yml} and the {@code Dockerfile}, checked without a Docker engine (none
 * exists on the build machines): the stack runs exactly the launcher's roles, each from the one
 * image, with real configuration keys whose values the roles accept, health checks on the ports
 * the roles serve, and so on ({@link ComposeCheck}). The second test breaks the files in the ways
 * that matter and shows each break is reported, so the first test can fail.
 */
class ComposeFileTest {
    /** What ops put in the environment or .env (the compose file requires the admin token). */
    static final Map<String, String> DEPLOY_ENV = Map.of("IM_ADMIN_TOKEN", "5c1f9a07e2b84d6f3a90c7e15d28b4f6");

    static ComposeCheck.Inputs files;
    static ComposeCheck.Launcher launcher;

    @BeforeAll
    static void read() throws IOException {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("docker-compose.yml"))) dir = dir.getParent();
        if (dir == null) throw new IllegalStateException("no docker-compose.yml above " + Path.of("").toAbsolutePath());
        files = ComposeCheck.Inputs.read(dir);
        launcher = ComposeCheck.Launcher.fromPicocli();
    }

    @Test
    void theStackRunsEveryRoleOfTheLauncherWithValidSettingsAndHealthChecks() {
        List<String> problems = ComposeCheck.problems(files, launcher, DEPLOY_ENV);
        assertEquals(List.of(), problems, "docker-compose.yml / Dockerfile problems:\n  " + String.join("\n  ", problems));
    }

    @Test
    void theRolesComeFromTheLauncherModel() {
        // Not a list kept here: whatever implements RoleCommand in `im` must be in compose (platform excepted).
        assertTrue(launcher.roles().contains(ComposeCheck.ALL_IN_ONE), launcher.toString());
        assertTrue(launcher.commands().containsAll(launcher.roles()), launcher.toString());
        Set<String> serviceRoles = new TreeSet<>(launcher.roles());
        serviceRoles.remove(ComposeCheck.ALL_IN_ONE);
        assertTrue(serviceRoles.containsAll(Set.of("gateway", "relay", "delivery", "sweeper")), serviceRoles.toString());
    }

    /** One way to break the stack: a change to the files or to the launcher, and the problem it must cause. */
    record Break(UnaryOperator<ComposeCheck.Inputs> files, UnaryOperator<ComposeCheck.Launcher> launcher,
                 Map<String, String> env, String expected) {
    }

    static Break compose(String from, String to, String expected) {
        return new Break(f -> new ComposeCheck.Inputs(once(f.compose(), from, to), f.dockerfile(), f.dockerignore(), f.rootPom(), f.launcherPom()),
                l -> l, DEPLOY_ENV, expected);
    }

    static Break dockerfile(String from, String to, String expected) {
        return new Break(f -> new ComposeCheck.Inputs(f.compose(), once(f.dockerfile(), from, to), f.dockerignore(), f.rootPom(), f.launcherPom()),
                l -> l, DEPLOY_ENV, expected);
    }

    /** Replaces the first occurrence; the text must be there, or the case would prove nothing. */
    static String once(String text, String from, String to) {
        int i = text.indexOf(from);
        if (i < 0) throw new AssertionError("the file no longer contains '" + from + "': update this case");
        return text.substring(0, i) + to + text.substring(i + from.length());
    }

    static Stream<Arguments> breaks() {
        return Stream.of(
                Arguments.of("a role renamed in compose", compose("command: [\"sweeper\"]", "command: [\"sweep\"]",
                        "command 'sweep' is not an im command")),
                Arguments.of("a role renamed in the launcher", new Break(f -> f,
                        l -> new ComposeCheck.Launcher(rename(l.commands(), "delivery", "deliver"), rename(l.roles(), "delivery", "deliver")),
                        DEPLOY_ENV, "command 'delivery' is not an im command")),
                Arguments.of("a role the launcher gained", new Break(f -> f,
                        l -> new ComposeCheck.Launcher(rename(l.commands(), "x", "archiver"), rename(l.roles(), "x", "archiver")),
                        DEPLOY_ENV, "the stack needs at least 1 archiver service(s), has 0")),
                Arguments.of("a client command as a service", new Break(f -> new ComposeCheck.Inputs(
                        once(f.compose(), "command: [\"sweeper\"]", "command: [\"lag\"]"), f.dockerfile(), f.dockerignore(), f.rootPom(), f.launcherPom()),
                        l -> new ComposeCheck.Launcher(rename(l.commands(), "x", "lag"), l.roles()),
                        DEPLOY_ENV, "'lag' is a client command of im, not a role")),
                Arguments.of("the all-in-one as a service", compose("command: [\"sweeper\"]", "command: [\"platform\"]", "is the all-in-one")),
                Arguments.of("a misspelt variable", compose("IM_GATEWAY_ID: gateway-2", "IM_GATEWAY_IDS: gateway-2",
                        "IM_GATEWAY_IDS: unknown configuration key")),
                Arguments.of("a misspelt variable in a shared block", compose("IM_KAFKA_BOOTSTRAP: kafka:9092", "IM_KAFKA_BOOTSTRAPS: kafka:9092",
                        "IM_KAFKA_BOOTSTRAPS: unknown configuration key")),
                Arguments.of("a value the role rejects", compose("IM_PARTITIONS: \"8\"", "IM_PARTITIONS: \"eight\"",
                        "IM_PARTITIONS: must be an integer")),
                Arguments.of("a short admin token", new Break(f -> f, l -> l, Map.of("IM_ADMIN_TOKEN", "short"),
                        "IM_ADMIN_TOKEN: token 1 must be at least 16 characters")),
                Arguments.of("no admin token given", new Break(f -> f, l -> l, Map.of(), "IM_ADMIN_TOKEN is required and not set")),
                Arguments.of("a variable that is not IM_*", compose("IM_GATEWAY_ID: gateway-2", "IM_GATEWAY_ID: gateway-2\n      JAVA_OPTS: -Xmx1g",
                        "JAVA_OPTS is set, but roles are configured by IM_* variables only")),
                Arguments.of("fault injection in production", compose("IM_GATEWAY_ID: gateway-2", "IM_GATEWAY_ID: gateway-2\n      IM_FAULT: gw.push:drop",
                        "IM_FAULT is for tests only")),
                Arguments.of("only one delivery node", compose("command: [\"delivery\"]", "command: [\"sweeper\"]",
                        "at least 2 delivery service(s), has 1")),
                Arguments.of("only one gateway", compose("command: [\"gateway\"]", "command: [\"sweeper\"]",
                        "at least 2 gateway service(s), has 1")),
                Arguments.of("a host port published twice", compose("\"${GATEWAY_2_PUBLISH:-8081}:8080\"", "\"${GATEWAY_2_PUBLISH:-8080}:8080\"",
                        "host port 8080 is published twice")),
                Arguments.of("a published port the gateway does not listen on", compose("\"${GATEWAY_2_PUBLISH:-8081}:8080\"", "\"${GATEWAY_2_PUBLISH:-8081}:8082\"",
                        "publishes container port 8082, but the role listens on 8080")),
                Arguments.of("a published admin listener", compose("\"${GATEWAY_2_PUBLISH:-8081}:8080\"", "\"${GATEWAY_2_PUBLISH:-8081}:8080\"\n      - \"9081:8081\"",
                        "publishes its admin listener (container port 8081)")),
                Arguments.of("a gateway bound to loopback", compose("IM_GATEWAY_HOST: 0.0.0.0", "IM_GATEWAY_HOST: 127.0.0.1", "binds 127.0.0.1")),
                Arguments.of("a health check on the wrong port", compose("http://127.0.0.1:9090/readyz", "http://127.0.0.1:9091/readyz",
                        "asks http://127.0.0.1:9091/readyz, but the role serves /readyz on 127.0.0.1:9090")),
                Arguments.of("an ops port the image does not expose", compose("IM_OPS_PORT: \"9090\"", "IM_OPS_PORT: \"9191\"",
                        "serves /readyz on port 9191, which the Dockerfile does not EXPOSE")),
                Arguments.of("a service without a health check", compose("    healthcheck: *ops-health\n", "",
                        "needs a healthcheck")),
                Arguments.of("no restart policy", compose("  restart: unless-stopped\n  stop_grace_period", "  stop_grace_period",
                        "needs a restart policy")),
                Arguments.of("relays on different slots", compose("IM_RELAY_SLOT: im_relay", "IM_RELAY_SLOT: im_relay_2",
                        "relays must share the same IM_RELAY_SLOT")),
                Arguments.of("two gateways with one id", compose("IM_GATEWAY_ID: gateway-2", "IM_GATEWAY_ID: gateway-1",
                        "IM_GATEWAY_ID gateway-1 is used by another gateway")),
                Arguments.of("a dependency on a missing service", compose("gateway-1: {condition: service_healthy}", "gateway-3: {condition: service_healthy}",
                        "depends on gateway-3, which is not a service")),
                Arguments.of("a dependency that does not wait for health", compose("kafka: {condition: service_healthy}", "kafka: {condition: service_started}",
                        "depends on kafka without condition: service_healthy")),
                Arguments.of("a role password that differs from PostgreSQL's", compose("IM_PG_PASSWORD: ${IM_PG_PASSWORD:-im}", "IM_PG_PASSWORD: other",
                        "IM_PG_PASSWORD (other) differs from the postgres service's POSTGRES_PASSWORD (im)")),
                Arguments.of("a bootstrap that is not the broker", compose("IM_KAFKA_BOOTSTRAP: kafka:9092", "IM_KAFKA_BOOTSTRAP: broker:9092",
                        "IM_KAFKA_BOOTSTRAP broker:9092 is not an advertised listener")),
                Arguments.of("PostgreSQL without logical decoding", compose("- wal_level=logical", "- wal_level=replica",
                        "PostgreSQL must run with -c wal_level=logical")),
                Arguments.of("a plain text listener on the network", compose("CLIENT:SASL_PLAINTEXT", "CLIENT:PLAINTEXT",
                        "listener CLIENT is reachable from the network without authentication (PLAINTEXT)")),
                Arguments.of("no authorizer", compose("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND: \"false\"", "KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND: \"true\"",
                        "needs an authorizer")),
                Arguments.of("roles without Kafka credentials", compose("  IM_KAFKA_CONFIG_FILE: /run/secrets/kafka-client.properties   # SASL/SCRAM as user im\n", "",
                        "IM_KAFKA_BOOTSTRAP without IM_KAFKA_CONFIG_FILE")),
                Arguments.of("credentials not mounted", compose("    - ./secrets/kafka-client.properties:/run/secrets/kafka-client.properties:ro\n\n",
                        "    - ./secrets/kafka-client.properties:/etc/kafka-client.properties:ro\n\n",
                        "IM_KAFKA_CONFIG_FILE /run/secrets/kafka-client.properties is not a file mounted into the service")),
                Arguments.of("a broker of another Kafka version", compose("apache/kafka:4.3.1", "apache/kafka:3.9.0",
                        "the broker image is Kafka 3.9.0")),
                Arguments.of("topics created by typos", compose("KAFKA_AUTO_CREATE_TOPICS_ENABLE: \"false\"", "KAFKA_AUTO_CREATE_TOPICS_ENABLE: \"true\"",
                        "KAFKA_AUTO_CREATE_TOPICS_ENABLE must be false")),
                Arguments.of("an undeclared volume", compose("  pgdata:      #", "  pgdatas:     #", "volume pgdata is not declared")),
                Arguments.of("a single-stage Dockerfile", dockerfile("FROM ${RUNTIME_IMAGE}\n", "", "needs at least two stages")),
                Arguments.of("a base image argument without a default", dockerfile("ARG RUNTIME_IMAGE=eclipse-temurin:17-jre", "ARG RUNTIME_IMAGE",
                        "the build argument RUNTIME_IMAGE needs an ARG with a default")),
                Arguments.of("a local stand-in as the default build image", dockerfile("ARG BUILD_IMAGE=maven:3.9-eclipse-temurin-17",
                        "ARG BUILD_IMAGE=localhost/im-standin/maven:3-jdk17", "must use the official maven image")),
                Arguments.of("a module pom not copied", dockerfile("COPY bench/pom.xml bench/\n", "", "must COPY bench/pom.xml before the first mvn run")),
                Arguments.of("a module added to the root pom only", new Break(f -> new ComposeCheck.Inputs(f.compose(), f.dockerfile(), f.dockerignore(),
                        once(f.rootPom(), "<module>bench</module>", "<module>bench</module>\n    <module>archive</module>"), f.launcherPom()),
                        l -> l, DEPLOY_ENV, "must COPY archive/pom.xml")),
                Arguments.of("the launcher not built", dockerfile("-pl launcher -am package\n", "-pl gateway -am package\n",
                        "must run `mvn ... -pl launcher -am package`")),
                Arguments.of("an entrypoint that does not run the jar", dockerfile("\"-jar\", \"/app/im.jar\"]", "\"-jar\", \"/app/app.jar\"]",
                        "ENTRYPOINT must be an exec-form")),
                Arguments.of("the jar renamed in the launcher pom", new Break(f -> new ComposeCheck.Inputs(f.compose(), f.dockerfile(), f.dockerignore(),
                        f.rootPom(), once(f.launcherPom(), "<finalName>im</finalName>", "<finalName>im-all</finalName>")),
                        l -> l, DEPLOY_ENV, "the launcher's jar (launcher/target/im-all.jar")),
                Arguments.of("a root runtime", dockerfile("USER im\n", "", "must run as a non-root USER")),
                Arguments.of("ports not exposed", dockerfile("EXPOSE 8080 8081 9090", "EXPOSE 8080 9090", "EXPOSE [8080, 9090] must be the default ports")),
                Arguments.of("curl missing for the health checks", dockerfile("--no-install-recommends curl", "--no-install-recommends wget",
                        "runs curl, which the Dockerfile's final stage does not install")),
                Arguments.of("secrets in the build context", new Break(f -> new ComposeCheck.Inputs(f.compose(), f.dockerfile(),
                        once(f.dockerignore(), "\n.env\n", "\n"), f.rootPom(), f.launcherPom()), l -> l, DEPLOY_ENV,
                        ".dockerignore: must exclude .env")));
    }

    static Set<String> rename(Set<String> names, String from, String to) {
        Set<String> out = new TreeSet<>(names);
        out.remove(from);
        out.add(to);
        return out;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("breaks")
    void eachWayToBreakTheStackIsReported(String what, Break b) {
        ComposeCheck.Inputs broken = b.files().apply(files);
        ComposeCheck.Launcher changed = b.launcher().apply(launcher);
        assertTrue(!broken.equals(files) || !changed.equals(launcher) || !b.env().equals(DEPLOY_ENV), "the case changes nothing");
        List<String> problems = ComposeCheck.problems(broken, changed, b.env());
        assertNotEquals(List.of(), problems, what + " went unnoticed");
        assertTrue(problems.stream().anyMatch(p -> p.contains(b.expected())),
                what + ": expected a problem containing '" + b.expected() + "', got:\n  " + String.join("\n  ", problems));
    }
}
