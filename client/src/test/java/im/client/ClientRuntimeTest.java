package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.internal.ClientFaults;
import im.protocol.Ack;
import im.testkit.Await;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Many clients of one process on one {@link ClientRuntime}: the SDK's guarantees hold, on the shared threads only. */
class ClientRuntimeTest {
    private static final Pattern OWN_CLIENT_THREAD = Pattern.compile("im-client-\\d+-.*");

    @TempDir
    Path dir;

    @Test
    void manyClientsOnOneWorkerStoreSyncAndAckWithoutThreadsOfTheirOwn() throws Exception {
        int clients = 40;
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
             ClientRuntime runtime = ClientRuntime.create(1)) {
            Set<String> before = threadNames();
            List<ImClient> all = new ArrayList<>();
            CountDownLatch stored = new CountDownLatch(clients);
            try {
                for (int i = 0; i < clients; i++) {
                    ImClient c = ImClient.open(ClientOptions.of(gw.uri(), "t-" + i, dir.resolve("c" + i)), runtime);
                    all.add(c);
                    c.addListener(new ClientListener() {
                        @Override
                        public void onCursor(String conv, long cursor) {
                            stored.countDown();
                        }
                    });
                    c.connect();
                }
                assertTrue(stored.await(30, TimeUnit.SECONDS), "every client stored the event");
                for (ImClient c : all) assertEquals(1, c.cursor("c-ab"));
                until(() -> gw.received(Ack.class).size() >= clients, "every client acked");
                Set<String> created = threadNames();
                created.removeAll(before);
                assertEquals(Set.of(), created.stream().filter(n -> OWN_CLIENT_THREAD.matcher(n).matches()).collect(Collectors.toSet()),
                        "clients on a runtime started threads of their own");
            } finally {
                all.forEach(ImClient::close);
            }
        }
    }

    @Test
    void aListenerThatClosesItsClientOnTheOnlyWorkerNeitherHangsNorStopsTheOthers() throws Exception {
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
             ClientRuntime runtime = ClientRuntime.create(1)) {
            ImClient first = ImClient.open(ClientOptions.of(gw.uri(), "t-1", dir.resolve("c1")), runtime);
            CountDownLatch closed = new CountDownLatch(1);
            first.addListener(new ClientListener() {
                @Override
                public void onCursor(String conv, long cursor) {
                    first.close(); // on the callbacks lane, which holds the runtime's only work thread
                    closed.countDown();
                }
            });
            first.connect();
            // close() waits up to 30 s for a receive lane that cannot run; anything near that is a hang.
            assertTrue(closed.await(10, TimeUnit.SECONDS), "close() from a listener hung");
            try (ImClient second = ImClient.open(ClientOptions.of(gw.uri(), "t-2", dir.resolve("c2")), runtime)) {
                second.connect();
                until(() -> second.cursor("c-ab") == 1, "the second client stored the event");
            }
            // The state directory was released by the close from the listener.
            try (ImClient again = ImClient.open(ClientOptions.of(gw.uri(), "t-1", dir.resolve("c1")), runtime)) {
                assertEquals(1, again.cursor("c-ab"));
            }
        }
    }

    @Test
    void aStoreWriteStuckOnTheDiskDoesNotHoldUpAnotherClientsCallbacks() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch stuck = new CountDownLatch(1);
        ClientFaults slowDisk = new ClientFaults() {
            @Override
            public void beforeStore(String conv, List<Long> seqs) {
                stuck.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS); // a store write that waits for the disk
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
             ClientRuntime runtime = ClientRuntime.create(1)) {
            ImClient slow = FaultInjection.open(ClientOptions.of(gw.uri(), "t-1", dir.resolve("c1")), slowDisk, runtime);
            try {
                slow.connect();
                assertTrue(stuck.await(10, TimeUnit.SECONDS), "the slow client's store write started");
                try (ImClient other = ImClient.open(ClientOptions.of(gw.uri(), "t-2", dir.resolve("c2")), runtime)) {
                    CountDownLatch connected = new CountDownLatch(1);
                    other.addListener(new ClientListener() {
                        @Override
                        public void onConnected() {
                            connected.countDown();
                        }
                    });
                    other.connect();
                    assertTrue(connected.await(5, TimeUnit.SECONDS), "a callback of another client waited for the stuck store write");
                }
            } finally {
                release.countDown();
                slow.close();
            }
        }
    }

    @Test
    void aRuntimeNeedsAWorkerAndItsThreadsEndWhenClosed() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> ClientRuntime.create(0));
        ClientRuntime runtime = ClientRuntime.create(2);
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
             ImClient c = ImClient.open(ClientOptions.of(gw.uri(), "t-1", dir.resolve("c1")), runtime)) {
            c.connect();
            until(() -> c.cursor("c-ab") == 1, "the client stored the event");
        }
        runtime.close();
        until(() -> threadNames().stream().noneMatch(n -> n.startsWith(runtime.name() + "-")), "the runtime's threads ended");
    }

    /** Polls {@code condition} for up to 30 s. */
    static void until(java.util.function.BooleanSupplier condition, String what) {
        Await.until(Duration.ofSeconds(30), condition, what);
    }

    private static Set<String> threadNames() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .collect(Collectors.toCollection(java.util.HashSet::new));
    }
}
