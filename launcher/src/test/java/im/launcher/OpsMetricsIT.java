package im.launcher;

import im.testkit.Await;
import java.time.Duration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.delivery.route.DeliveryNode;
import im.gateway.Gateway;
import im.infra.config.Settings;
import im.infra.kafka.SharedTopics;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import im.infra.role.Role;
import im.relay.CdcRelay;
import im.sweeper.Sweeper;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import picocli.CommandLine;

/**
 * Every metric the alert rules ({@code ops/prometheus/alerts.yml}) and the dashboard
 * ({@code ops/grafana/im-platform.json}) use is exported by a running stack: the four roles each
 * start as their role command does (own meter registry, own ops server; the gateway serves its
 * own), on the test stack's PostgreSQL and Kafka; after messages are sent and acked through the
 * {@code im} CLI, the union of their {@code /metrics} must hold every name and every
 * {@code label="value"} the files select on ({@link OpsFiles}).
 */
@ExtendWith(ImStackExtension.class)
class OpsMetricsIT {
    private final List<AutoCloseable> started = new ArrayList<>();
    private final ExecutorService background = Executors.newCachedThreadPool();
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void stop() throws Exception {
        background.shutdownNow();
        for (int i = started.size() - 1; i >= 0; i--) started.get(i).close();
    }

    /** Runs {@code im args} in this JVM, asserting exit 0; its standard output, also written to {@code out}. */
    static String im(StringWriter out, String... args) {
        CommandLine cl = Im.commandLine();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        assertEquals(0, code, String.join(" ", args) + "\n" + out + err);
        return out.toString();
    }

    static String im(String... args) {
        return im(new StringWriter(), args);
    }

    /** Users u-ana and u-bo, devices d-ana and d-bo, direct conversation c-ab, through {@code gateway}'s admin API: the two device tokens. */
    static String[] anaAndBoInCab(String adminUrl) {
        String[] admin = {"--admin-url", adminUrl, "--admin-token", CliIT.ADMIN};
        im(CliIT.with(new String[] {"admin", "user", "create", "u-ana"}, admin));
        im(CliIT.with(new String[] {"admin", "user", "create", "u-bo"}, admin));
        String ana = im(CliIT.with(new String[] {"admin", "device", "register", "u-ana", "d-ana"}, admin)).trim();
        String bo = im(CliIT.with(new String[] {"admin", "device", "register", "u-bo", "d-bo"}, admin)).trim();
        im(CliIT.with(new String[] {"admin", "conv", "create", "c-ab", "u-ana", "u-bo", "--kind", "direct"}, admin));
        return new String[] {ana, bo};
    }

    private String get(String url) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), url);
            return r.body();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The value of the first series of {@code name} in {@code text}; NaN if none. */
    private static double value(String text, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "(\\{[^}]*})? (\\S+)$").matcher(text);
        return m.find() ? Double.parseDouble(m.group(2)) : Double.NaN;
    }

    @Test
    void everyMetricTheAlertRulesAndTheDashboardUseIsExportedByARunningStack(TestStack stack) throws Exception {
        Settings s = CliIT.platformSettings(stack);
        SharedTopics.create(stack.kafkaBootstrap(), s);
        Map<String, String> scrapes = new LinkedHashMap<>();   // role → its /metrics URL
        List<Role.Running<?>> roles = new ArrayList<>();
        String gateway = null;
        String gatewayAdmin = null;
        for (Role<?> role : List.<Role<?>>of(CdcRelay.role(), DeliveryNode.role(), Sweeper.role(), Gateway.role())) {
            PrometheusMeterRegistry meters = Metrics.newRegistry();
            Role.Running<?> running = role.start(s, meters);
            started.add(running);
            roles.add(running);
            if (running.component() instanceof Gateway g) {
                gateway = "http://127.0.0.1:" + g.port();
                gatewayAdmin = "http://127.0.0.1:" + g.adminPort();
                scrapes.put(role.name(), gatewayAdmin + "/metrics");
            } else {
                OpsServer ops = OpsServer.start(OpsConfig.from(s), meters, running::isReady);
                started.add(ops);
                scrapes.put(role.name(), ops.url() + "/metrics");
            }
        }
        Await.until(Duration.ofSeconds(90), () -> roles.stream().allMatch(Role.Running::isReady), "every role ready");

        // Traffic: bo follows c-ab (acking) while ana sends, one message at a time, so that bo's
        // cursor advances several times after its first ack (the sampled delivery latency).
        String[] tokens = anaAndBoInCab(gatewayAdmin);
        String ana = tokens[0];
        String bo = tokens[1];
        StringWriter tailOut = new StringWriter();
        String gw = gateway;
        Future<String> tail = background.submit(() -> im(tailOut, "tail", "--gateway", gw, "--token", bo, "--conv", "c-ab", "--from", "1", "-n", "5"));   // bo sees from his join, seq 2
        for (int i = 1; i <= 4; i++) {
            im("send", "--gateway", gateway, "--token", ana, "--conv", "c-ab", "hello " + i);
            int n = i;
            Await.until(Duration.ofSeconds(90), () -> tailOut.toString().contains("hello " + n), "bo's tail printed hello " + n);
        }
        tail.get(60, TimeUnit.SECONDS);

        List<String> exprs = OpsFiles.expressions(OpsFiles.root());
        String[] all = new String[1];
        Set<String>[] missing = new Set[1];
        try {
            Await.until(Duration.ofSeconds(90), () -> {
                StringBuilder text = new StringBuilder();
                scrapes.values().forEach(url -> text.append(get(url)).append('\n'));
                all[0] = text.toString();
                missing[0] = OpsFiles.missing(exprs, all[0]);
                return missing[0].isEmpty() && value(all[0], "im_delivery_latency_seconds_count") > 0
                        && value(all[0], "im_relay_slot_retained_wal_bytes") >= 0;
            }, "every metric of the rules and the dashboard exported, a delivery latency sampled, the slot's WAL read");
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\nmissing: " + missing[0]
                    + "\nim_delivery_latency_seconds_count: " + value(all[0], "im_delivery_latency_seconds_count")
                    + "\nim_relay_slot_retained_wal_bytes: " + value(all[0], "im_relay_slot_retained_wal_bytes"), e);
        }
        assertTrue(OpsFiles.names(exprs).size() > 15, "the files name our metrics: " + OpsFiles.names(exprs));
    }
}
