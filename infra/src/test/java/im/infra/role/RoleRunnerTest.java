package im.infra.role;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The one runner: its ready lines, its ops server, and closing in reverse order. */
class RoleRunnerTest {
    private static final Settings NO_KAFKA = Settings.of(Map.of(ConfigKeys.OPS_PORT.name(), "0"));

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    private final List<String> closed = new CopyOnWriteArrayList<>();
    private final AtomicBoolean ready = new AtomicBoolean();

    /** A role of one component that records its close and is ready while {@link #ready}. */
    private Role<AutoCloseable> role(String detail) {
        return Role.of("fake", (s, meters) -> (AutoCloseable) () -> closed.add("fake"),
                c -> ready.get(), c -> detail);
    }

    private String output() {
        synchronized (bytes) {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    @Test
    void printsReadyOnceStartedAndRunningOnlyOnceTheReadinessCheckPasses() throws Exception {
        RoleRunner runner = new RoleRunner(role("slot=s1"), out);
        Role.Running<?> running = runner.start(NO_KAFKA);
        Thread announcer = new Thread(() -> runner.announce(running));
        announcer.start();
        try {
            await("the IM_READY line", () -> output().contains("\n"));
            String first = output().lines().findFirst().orElseThrow();
            assertTrue(first.matches("IM_READY fake slot=s1 ops=http://127\\.0\\.0\\.1:\\d+"), first);
            String readyz = first.substring(first.indexOf("ops=") + 4) + "/readyz";
            assertEquals(503, get(readyz), "the ops server asks the role's check");
            assertFalse(output().contains("IM_RUNNING"), "not ready yet: " + output());

            ready.set(true);
            announcer.join(10_000);
            assertFalse(announcer.isAlive());
            assertEquals(List.of(first, "IM_RUNNING fake"), output().lines().toList());
            assertEquals(200, get(readyz));
        } finally {
            ready.set(true);
            announcer.join(10_000);
            runner.close();
        }
        assertEquals(List.of("fake"), closed);
    }

    @Test
    void aRoleWithItsOwnOpsEndpointsGetsNoOpsServerAndAReadyLineWithoutOps() {
        Role<String> own = new Role<>("gw", (s, meters) ->
                new Role.Running<>("gw", gw -> true, gw -> "port=1 id=g", true, () -> closed.add("gw")));
        RoleRunner runner = new RoleRunner(own, out);
        runner.announce(runner.start(NO_KAFKA));
        runner.close();
        assertEquals(List.of("IM_READY gw port=1 id=g", "IM_RUNNING gw"), output().lines().toList());
        assertEquals(List.of("gw"), closed);
    }

    @Test
    void aFailedStartClosesWhatWasStartedAndPrintsNothing() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            RoleRunner runner = new RoleRunner(role(""), out);
            Settings s = NO_KAFKA.with(ConfigKeys.OPS_PORT, Integer.toString(taken.getLocalPort()));
            assertThrows(UncheckedIOException.class, () -> runner.start(s), "the ops server cannot bind");
        }
        assertEquals(List.of("fake"), closed, "the role started before the ops server was closed again");
        assertEquals("", output());
    }

    private static int get(String url) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }
}
