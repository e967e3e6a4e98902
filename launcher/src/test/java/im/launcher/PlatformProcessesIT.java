package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
import im.testkit.Await;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code im platform --processes --demo} from the shaded jar: embedded PostgreSQL and Kafka plus
 * two relays, two delivery nodes, a sweeper and two gateways, each its own process. The demo
 * users chat across the two gateways; SIGTERM to the platform stops every child.
 */
class PlatformProcessesIT {
    private static final Pattern GATEWAY = Pattern.compile("^  (gateway-\\d+) +gateway port=(\\d+) admin=(\\d+) id=(\\S+)");
    private static final Pattern TOKEN = Pattern.compile("^  (u-ana|u-bo) +/ d-\\w+ +token: (imt_\\S+)");

    @Test
    void everyRoleRunsAsItsOwnProcessAndMessagesCrossGateways(@TempDir Path dir) throws Exception {
        PlatformChild child = PlatformChild.start(dir, Map.of("IM_PARTITIONS", "4"), "--processes", "--demo");
        Process platform = child.process;
        List<String> output = child.output;
        List<ProcessHandle> children = new ArrayList<>();
        try {
            child.awaitLine("IM_READY platform", 300);
            platform.descendants().forEach(children::add);
            assertEquals(7, children.stream().filter(h -> h.info().command().orElse("").endsWith("java")).count(),
                    "2 relays, 2 delivery nodes, a sweeper, 2 gateways: " + children.size() + "\n" + String.join("\n", output));

            List<Integer> ports = new ArrayList<>();
            String anaToken = null;
            String boToken = null;
            for (String line : output) {
                Matcher g = GATEWAY.matcher(line);
                if (g.find()) ports.add(Integer.parseInt(g.group(2)));
                Matcher t = TOKEN.matcher(line);
                if (t.find()) {
                    if (t.group(1).equals("u-ana")) anaToken = t.group(2);
                    else boToken = t.group(2);
                }
            }
            assertEquals(2, ports.size(), String.join("\n", output));
            assertNotNull(anaToken, String.join("\n", output));
            assertNotNull(boToken, String.join("\n", output));
            String boLink = "    as u-bo:  http://127.0.0.1:" + ports.get(1) + "/#token=" + boToken;
            assertTrue(output.contains(boLink), "u-bo's demo link points at the second gateway: " + boLink);

            List<Long> pushedToBo = new CopyOnWriteArrayList<>();
            try (ImClient ana = ImClient.open(ClientOptions.of(ws(ports.get(0)), anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(ws(ports.get(1)), boToken, dir.resolve("bo")))) {
                bo.addListener(new ClientListener() {
                    @Override
                    public void onPush(ServerFrame f) {
                        if (f instanceof EventPush p) pushedToBo.add(p.ev().seq());
                    }
                });
                ana.connect();
                bo.connect();
                List<Long> seqs = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 60_000;
                // The first messages may arrive by sync while routes settle; keep sending until one is pushed live.
                while (pushedToBo.stream().noneMatch(seqs::contains)) {
                    assertTrue(System.currentTimeMillis() < deadline, "nothing pushed across gateways: " + pushedToBo);
                    seqs.add(ana.send("c-ab", "hello across gateways " + seqs.size()).seq());
                    long last = seqs.get(seqs.size() - 1);
                    Await.until(Duration.ofMillis(Math.max(0, deadline - System.currentTimeMillis())), () -> bo.cursor("c-ab") >= last,
                            "bo stored seq " + last + "; pushed across gateways so far: " + pushedToBo);
                }
                assertEquals(seqs.get(seqs.size() - 1), bo.cursor("c-ab"));
                assertEquals("hello across gateways " + (seqs.size() - 1),
                        bo.events("c-ab").get(bo.events("c-ab").size() - 1).body());
            }
        } finally {
            // The platform's own lines (children's lines start with [name]).
            output.stream().filter(l -> !l.startsWith("[")).forEach(System.out::println);
            platform.destroy();   // SIGTERM: the shutdown hook stops the children, then PostgreSQL and Kafka
            boolean exited = platform.waitFor(90, TimeUnit.SECONDS);
            if (!exited) platform.destroyForcibly();
            try {
                CompletableFuture.allOf(children.stream().map(ProcessHandle::onExit).toArray(CompletableFuture[]::new))
                        .get(30, TimeUnit.SECONDS);
            } catch (TimeoutException stillRunning) {
                // not a failure yet: those still alive are killed first, then the assertion below names them
            }
            List<ProcessHandle> alive = children.stream().filter(ProcessHandle::isAlive).toList();
            alive.forEach(ProcessHandle::destroyForcibly);
            assertTrue(exited, "the platform stopped on SIGTERM");
            assertFalse(!alive.isEmpty(), "children left running after the platform stopped: " + alive);
        }
    }

    private static URI ws(int port) {
        return URI.create("ws://127.0.0.1:" + port + "/ws");
    }
}
