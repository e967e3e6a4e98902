package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientOptions;
import im.client.internal.ClientFaults;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One state directory belongs to one open client: a second {@link ImClient#open} on it fails with
 * a message naming it (two stores appending to one log would corrupt it), and {@link ImClient#close}
 * hands the directory back only once the client's threads stopped writing to it, so a restarted
 * client never reads a log another one is still extending.
 */
class ImClientStateDirTest {
    @TempDir
    Path dir;

    @Test
    void aSecondClientOnTheSameStateDirectoryIsRefusedUntilTheFirstIsClosed() throws Exception {
        ClientOptions options = ClientOptions.of(java.net.URI.create("ws://127.0.0.1:9/ws"), "tok-1", dir);
        ImClient first = ImClient.open(options);
        IOException e = assertThrows(IOException.class, () -> ImClient.open(options));
        assertTrue(e.getMessage().contains(dir.toAbsolutePath().toString()) && e.getMessage().contains("in use"), e.getMessage());
        first.close();
        ImClient.open(options).close();
    }

    @Test
    void closeHandsTheDirectoryBackOnlyAfterTheBatchBeingStoredIsDone() throws Exception {
        CountDownLatch storing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ClientFaults slowStore = new ClientFaults() {
            @Override
            public void beforeStore(String conv, List<Long> seqs) {
                storing.countDown();
                boolean interrupted = false;
                while (true) {   // a slow fsync: an interrupt does not make it return early
                    try {
                        release.await();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) Thread.currentThread().interrupt();
            }
        };
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent)) {
            ClientOptions options = ClientOptions.of(gw.uri(), "tok-1", dir);
            ImClient client = FaultInjection.open(options, slowStore);
            try {
                closeWhileStoring(client, options, storing, release);
            } finally {
                release.countDown();
                client.close();
            }
        }
    }

    private static void closeWhileStoring(ImClient client, ClientOptions options, CountDownLatch storing,
                                          CountDownLatch release) throws Exception {
        client.connect();
        assertTrue(storing.await(10, TimeUnit.SECONDS), "the synced event is being stored");

        CompletableFuture<Void> closed = CompletableFuture.runAsync(client::close);
        IOException busy = assertThrows(IOException.class, () -> ImClient.open(options),
                "the directory is still being written");
        assertTrue(busy.getMessage().contains("in use"), busy.getMessage());
        assertFalse(closed.isDone(), "close waits for the receive thread");

        release.countDown();
        closed.get(10, TimeUnit.SECONDS);
        try (ImClient reopened = ImClient.open(options)) {
            // Whatever the batch left is consistent: stored and cursor agree (both 0 or both 1).
            assertEquals(reopened.events("c-ab").size(), reopened.cursor("c-ab"));
        }
    }
}
