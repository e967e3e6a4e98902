package im.launcher;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ReceivedEvent;
import im.infra.config.ChildJvm;
import im.infra.config.ConfigKeys;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compose stack's role split without Docker: every role is its own process
 * ({@code java -jar launcher/target/im.jar <role>}, configured by IM_* variables only) against
 * one shared PostgreSQL and Kafka (the test stack's). A relay, two delivery nodes, a sweeper and
 * two gateways; a device on each gateway; messages both ways are pushed live to the device on
 * the other gateway, in order and once, and both cursors reach the head. Then one delivery node
 * is killed with SIGKILL and pushes continue through the other in every partition.
 */
@ExtendWith(ImStackExtension.class)
class MultiProcessIT {
    private static final Duration START = Duration.ofSeconds(180);   // a ceiling for a loaded 2-core machine (idle: ~40 s)
    private static final Duration CONVERGE = Duration.ofSeconds(45);
    private static final String ADMIN_TOKEN = "multi-process-admin-token-0123";
    private static final int PARTITIONS = 4;
    private static final int MESSAGES_EACH_WAY = 10;
    private static final Pattern OPS_URL = Pattern.compile("ops=(http://\\S+)");
    private static final Pattern GATEWAY_PORT = Pattern.compile("port=(\\d+)");
    private static final Pattern ADMIN_PORT = Pattern.compile("admin=(\\d+)");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /** One role in its own JVM; its stdout and stderr go to a file. */
    private record Child(String name, Process process, Path log) {
        String output() {
            try {
                return Files.readString(log, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(no output: " + e + ")";
            }
        }

        /** The first line starting with {@code prefix}; fails if the process exits or the deadline passes. */
        String awaitLine(String prefix, long deadlineNanos) {
            while (true) {
                for (String line : output().split("\n")) {
                    if (line.startsWith(prefix)) return line;
                }
                if (!process.isAlive()) throw new AssertionError(name + " exited (" + process.exitValue() + ") before printing " + prefix);
                if (System.nanoTime() > deadlineNanos) throw new AssertionError(name + " did not print " + prefix + " within " + START);
                LockSupport.parkNanos(50_000_000);
            }
        }
    }

    private final List<Child> children = new CopyOnWriteArrayList<>();

    @Test
    void rolesAsSeparateProcessesPushAcrossGatewaysAndSurviveADeliveryNodeKill(TestStack stack, @TempDir Path dir) throws Exception {
        Path jar = Path.of(System.getProperty("im.jar", "target/im.jar")).toAbsolutePath();
        assertTrue(Files.isRegularFile(jar), jar + " is missing: the IT runs after `package`");
        Thread reaper = new Thread(this::killAll, "multi-process-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);   // the test JVM dies: no orphaned roles
        try {
            run(stack, dir, jar);
        } catch (Throwable t) {
            for (Child c : children) System.out.println("==== " + c.name() + " ====\n" + tail(c.output(), 60));
            throw t;
        } finally {
            killAll();
            Runtime.getRuntime().removeShutdownHook(reaper);
        }
    }

    private void run(TestStack stack, Path dir, Path jar) throws Exception {
        long t0 = System.nanoTime();
        stack.kafkaBootstrap();   // start the shared broker so the settings name it
        Map<String, String> common = new HashMap<>(stack.settings(Map.of(
                ConfigKeys.PARTITIONS.name(), String.valueOf(PARTITIONS),
                ConfigKeys.ADMIN_TOKEN.name(), ADMIN_TOKEN,
                ConfigKeys.RELAY_SLOT.name(), "mp_" + stack.database().toLowerCase(),
                ConfigKeys.OPS_PORT.name(), "0",          // every process its own free ops port
                ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_PORT.name(), "0")).explicitValues());

        // Every role at once, as compose would start them.
        long launched = System.nanoTime();
        Child relay = start(jar, dir, "relay", "relay", common, Map.of());
        Child delivery1 = start(jar, dir, "delivery-1", "delivery", common, Map.of(ConfigKeys.STATE_DIR.name(), dir.resolve("state-1").toString()));
        Child delivery2 = start(jar, dir, "delivery-2", "delivery", common, Map.of(ConfigKeys.STATE_DIR.name(), dir.resolve("state-2").toString()));
        Child sweeper = start(jar, dir, "sweeper", "sweeper", common, Map.of(ConfigKeys.STATE_DIR.name(), dir.resolve("state-s").toString()));
        Child gatewayA = start(jar, dir, "gateway-a", "gateway", common, Map.of(ConfigKeys.GATEWAY_ID.name(), "gw-a"));
        Child gatewayB = start(jar, dir, "gateway-b", "gateway", common, Map.of(ConfigKeys.GATEWAY_ID.name(), "gw-b"));

        long deadline = System.nanoTime() + START.toNanos();
        Map<Child, String> readyz = new TreeMap<>((a, b) -> a.name().compareTo(b.name()));
        for (Child c : List.of(relay, delivery1, delivery2, sweeper)) {
            readyz.put(c, opsUrl(c.awaitLine("IM_READY", deadline)) + "/readyz");
        }
        String readyA = gatewayA.awaitLine("IM_READY gateway", deadline);
        String readyB = gatewayB.awaitLine("IM_READY gateway", deadline);
        int portA = port(GATEWAY_PORT, readyA);
        int portB = port(GATEWAY_PORT, readyB);
        int adminA = port(ADMIN_PORT, readyA);
        assertTrue(portA != portB, "two gateways, two ports");
        readyz.put(gatewayA, "http://127.0.0.1:" + adminA + "/readyz");
        readyz.put(gatewayB, "http://127.0.0.1:" + port(ADMIN_PORT, readyB) + "/readyz");
        for (Map.Entry<Child, String> r : readyz.entrySet()) {
            Await.until(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())), () -> status(r.getValue()) == 200,
                    r.getKey().name() + " ready at " + r.getValue());
            System.out.printf("%s ready (%s) %d ms after the launch%n", r.getKey().name(), r.getValue(), ms(launched));
        }
        System.out.printf("six role processes ready after %d ms%n", ms(t0));

        // Users, devices and conversations through gateway A's admin API: c-ab, plus one
        // conversation per partition of the event topic, so every delivery task carries one.
        String admin = "http://127.0.0.1:" + adminA + "/admin";
        for (String u : List.of("u-ana", "u-bo")) post(admin + "/users", Map.of("user", u, "name", u.substring(2)));
        String anaToken = post(admin + "/devices", Map.of("user", "u-ana", "device", "d-ana")).get("token").asText();
        String boToken = post(admin + "/devices", Map.of("user", "u-bo", "device", "d-bo")).get("token").asText();
        List<String> perPartition = conversationsCoveringEveryPartition();
        List<String> convs = new ArrayList<>(List.of("c-ab"));
        convs.addAll(perPartition);
        for (String c : convs) post(admin + "/conversations", Map.of("conv", c, "kind", "direct", "members", List.of("u-ana", "u-bo")));

        Map<String, List<Event>> pushedToAna = new ConcurrentHashMap<>();
        Map<String, List<Event>> pushedToBo = new ConcurrentHashMap<>();
        try (ImClient ana = client(portA, anaToken, dir.resolve("ana"), pushedToAna);
             ImClient bo = client(portB, boToken, dir.resolve("bo"), pushedToBo)) {
            // Routes exist once a push has crossed in each direction (sub is asynchronous).
            warmUp(ana, pushedToBo, "u-ana");
            warmUp(bo, pushedToAna, "u-bo");

            // Both ways, interleaved: each message is pushed live to the device on the other gateway.
            List<Long> anaSent = new ArrayList<>();
            List<Long> boSent = new ArrayList<>();
            for (int i = 0; i < MESSAGES_EACH_WAY; i++) {
                anaSent.add(ana.send("c-ab", "ana->bo " + i).seq());
                boSent.add(bo.send("c-ab", "bo->ana " + i).seq());
            }
            Await.until(CONVERGE, () -> seqs(pushed(pushedToBo, "ana->bo ")).containsAll(anaSent)
                    && seqs(pushed(pushedToAna, "bo->ana ")).containsAll(boSent), "every message pushed across the gateways");
            assertEquals(anaSent, seqs(pushed(pushedToBo, "ana->bo ")), "ana's messages pushed to bo on the other gateway, in order, once each");
            assertEquals(boSent, seqs(pushed(pushedToAna, "bo->ana ")), "bo's messages pushed to ana on the other gateway, in order, once each");
            long head = head(stack.dataSource(), "c-ab");
            assertEquals(Math.max(anaSent.get(anaSent.size() - 1), boSent.get(boSent.size() - 1)), head);
            awaitCursors(stack.dataSource(), ana, bo, "c-ab", head);
            // A member sees the conversation from its join: ana joined at seq 1, bo at seq 2.
            assertEquals(range(2, head), seqs(bo.events("c-ab")), "bo stored every event of c-ab once, in order");
            assertEquals(range(1, head), seqs(ana.events("c-ab")), "ana stored every event of c-ab once, in order");
            System.out.printf("%d messages pushed across the gateways, cursors at head %d, after %d ms%n", 2 * MESSAGES_EACH_WAY, head, ms(t0));

            // kill -9 one delivery node: its partitions move to the other; pushes continue in every partition.
            delivery1.process().destroyForcibly();
            assertTrue(delivery1.process().waitFor(10, TimeUnit.SECONDS), "delivery-1 killed");
            assertEquals(137, delivery1.process().exitValue(), "SIGKILL, no shutdown hook");
            long killedAt = System.nanoTime();
            Map<String, Long> anaAfter = new TreeMap<>();
            Map<String, Long> boAfter = new TreeMap<>();
            for (String c : perPartition) {
                anaAfter.put(c, ana.send(c, "ana after the kill").seq());
                boAfter.put(c, bo.send(c, "bo after the kill").seq());
            }
            Await.until(CONVERGE, () -> perPartition.stream().allMatch(c ->
                            seqs(from(pushedToBo, c, "u-ana")).contains(anaAfter.get(c))
                                    && seqs(from(pushedToAna, c, "u-bo")).contains(boAfter.get(c))),
                    "pushes resumed through delivery-2 in every partition");
            System.out.printf("pushes resumed in all %d partitions %d ms after the kill%n", PARTITIONS, ms(killedAt));
            assertEquals(200, status(readyz.get(delivery2)), "the surviving node is ready");
            for (String c : perPartition) {
                long h = head(stack.dataSource(), c);
                awaitCursors(stack.dataSource(), ana, bo, c, h);
                assertEquals(range(2, h), seqs(bo.events(c)), c + ": bo stored every event once");
                assertEquals(range(1, h), seqs(ana.events(c)), c + ": ana stored every event once");
            }
            for (Child c : List.of(relay, delivery2, sweeper, gatewayA, gatewayB)) assertTrue(c.process().isAlive(), c.name() + " still runs");
        }
        System.out.printf("done after %d ms%n", ms(t0));
    }

    private Child start(Path jar, Path dir, String name, String role, Map<String, String> common, Map<String, String> own) throws IOException {
        Path log = dir.resolve(name + ".log");
        Map<String, String> env = new HashMap<>(common);   // configuration by environment only, and only ours
        env.putAll(own);
        ProcessBuilder pb = ChildJvm.builder(env,
                        List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar.toString(), role))
                .redirectOutput(log.toFile());
        Child c = new Child(name, pb.start(), log);
        children.add(c);
        return c;
    }

    private void killAll() {
        for (Child c : children) c.process().destroyForcibly();
        for (Child c : children) {
            try {
                c.process().waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static ImClient client(int port, String token, Path stateDir, Map<String, List<Event>> pushed) throws IOException {
        ImClient c = ImClient.open(ClientOptions.of(URI.create("ws://127.0.0.1:" + port + "/ws"), token, stateDir));
        c.addListener(new ClientListener() {
            @Override
            public void onPush(ServerFrame f) {
                if (f instanceof EventPush p) pushed.computeIfAbsent(p.ev().conv(), k -> new CopyOnWriteArrayList<>()).add(p.ev());
            }
        });
        c.connect();
        return c;
    }

    /** Sends until one message is pushed to the other side (the other device's route is in place). */
    private static void warmUp(ImClient sender, Map<String, List<Event>> pushedToOther, String senderUser) throws IOException {
        long deadline = System.nanoTime() + CONVERGE.toNanos();
        while (true) {
            long seq = sender.send("c-ab", "warm-up").seq();
            long until = Math.min(deadline, System.nanoTime() + Duration.ofSeconds(3).toNanos());
            while (System.nanoTime() < until) {
                if (seqs(from(pushedToOther, "c-ab", senderUser)).contains(seq)) return;
                LockSupport.parkNanos(10_000_000);
            }
            if (System.nanoTime() > deadline) throw new AssertionError("no push from " + senderUser + " crossed the gateways within " + CONVERGE);
        }
    }

    private static void awaitCursors(DataSource db, ImClient ana, ImClient bo, String conv, long head) {
        Await.until(CONVERGE, () -> ana.cursor(conv) == head && bo.cursor(conv) == head
                && cursorRow(db, "d-ana", conv) == head && cursorRow(db, "d-bo", conv) == head,
                conv + ": both devices' cursors (local and device_cursors) at head " + head);
    }

    /** One direct conversation per partition of the conversation-keyed topics (Kafka's default partitioner). */
    private static List<String> conversationsCoveringEveryPartition() {
        Map<Integer, String> byPartition = new TreeMap<>();
        for (int i = 0; byPartition.size() < PARTITIONS; i++) {
            String conv = "p" + i;
            byPartition.putIfAbsent(Utils.toPositive(Utils.murmur2(conv.getBytes(StandardCharsets.UTF_8))) % PARTITIONS, conv);
        }
        return new ArrayList<>(byPartition.values());
    }

    private static List<Event> from(Map<String, List<Event>> pushed, String conv, String sender) {
        return pushed.getOrDefault(conv, List.of()).stream().filter(e -> sender.equals(e.sender()) && Event.MSG.equals(e.kind())).toList();
    }

    /** The messages of c-ab pushed to one device whose body starts with {@code prefix}, in arrival order. */
    private static List<Event> pushed(Map<String, List<Event>> pushed, String prefix) {
        return pushed.getOrDefault("c-ab", List.of()).stream().filter(e -> e.body() != null && e.body().startsWith(prefix)).toList();
    }

    private static List<Long> seqs(List<?> events) {
        List<Long> out = new ArrayList<>();
        for (Object e : events) out.add(e instanceof Event ev ? ev.seq() : ((ReceivedEvent) e).seq());
        return out;
    }

    private static List<Long> range(long from, long to) {
        List<Long> r = new ArrayList<>();
        for (long i = from; i <= to; i++) r.add(i);
        return r;
    }

    private static JsonNode post(String url, Map<String, Object> body) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url))
                .header("Authorization", "Bearer " + ADMIN_TOKEN)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(201, r.statusCode(), "POST " + url + " " + body + " -> " + r.body());
        return JSON.readTree(r.body());
    }

    private static int status(String url) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(3)).GET().build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static long head(DataSource db, String conv) {
        return query(db, "SELECT head_seq FROM conversations WHERE conv_id = ?", conv);
    }

    private static long cursorRow(DataSource db, String device, String conv) {
        return query(db, "SELECT COALESCE((SELECT delivered_seq FROM device_cursors WHERE device_id = ? AND conv_id = ?), -1)", device, conv);
    }

    private static long query(DataSource db, String sql, Object... args) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String opsUrl(String readyLine) {
        Matcher m = OPS_URL.matcher(readyLine);
        if (!m.find()) throw new AssertionError("no ops=<url> in: " + readyLine);
        return m.group(1);
    }

    /** The port a gateway's ready line names with {@code pattern} (port=, admin=). */
    private static int port(Pattern pattern, String readyLine) {
        Matcher m = pattern.matcher(readyLine);
        if (!m.find()) throw new AssertionError("no " + pattern + " in: " + readyLine);
        return Integer.parseInt(m.group(1));
    }

    private static long ms(long since) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
    }

    private static String tail(String text, int lines) {
        String[] all = text.split("\n");
        return String.join("\n", java.util.Arrays.copyOfRange(all, Math.max(0, all.length - lines), all.length));
    }

}
