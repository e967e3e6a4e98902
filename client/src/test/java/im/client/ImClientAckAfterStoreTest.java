package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.internal.ClientFaults;
import im.client.internal.FaultInjection;
import im.protocol.Ack;
import im.protocol.ClientFrame;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * D3 on the device: when an ack reaches the server, the acked events are already on disk with
 * their commit record (what a restarted client reads back). The store is held back (up to a
 * second) until an ack arrives, so an SDK that acked before its store's fsync returned fails here
 * every time, not by a race.
 */
class ImClientAckAfterStoreTest {
    @TempDir
    Path dir;

    @Test
    void anAckArrivesOnlyAfterTheCommitRecordCoveringItIsOnDisk() throws Exception {
        Path log = dir.resolve("bo").resolve("events.log");
        CompletableFuture<String> firstAck = new CompletableFuture<>();
        CountDownLatch ackSeen = new CountDownLatch(1);
        ClientFaults holdStore = new ClientFaults() {
            @Override
            public void beforeStore(String conv, List<Long> seqs) {
                try {
                    ackSeen.await(1, TimeUnit.SECONDS); // a correct SDK sends no ack meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (FakeGateway gw = new FakeGateway((ClientFrame f) -> {
            if (f instanceof Ack a) {
                firstAck.complete(commitsOf(log).stream().anyMatch(l -> l.contains("\"" + a.conv() + "\":" + a.seq()))
                        ? "stored" : "ack of " + a.seq() + " before its commit record was on disk");
                ackSeen.countDown();
            }
            return FakeGateway.oneUnstoredEvent(f);
        });
             ImClient bo = FaultInjection.open(ClientOptions.of(gw.uri(), "t-bo", dir.resolve("bo")), holdStore)) {
            bo.connect();
            assertEquals("stored", firstAck.get(10, TimeUnit.SECONDS));
        }
    }

    private static List<String> commitsOf(Path log) {
        try {
            return Files.exists(log) ? Files.readAllLines(log).stream().filter(l -> l.startsWith("{\"commit\":")).toList() : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
