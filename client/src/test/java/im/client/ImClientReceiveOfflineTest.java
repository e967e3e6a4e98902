package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.internal.DurableEventStore;
import im.protocol.Event;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The receive-side API of ImClient without a server: it reads the durable store of stateDir. */
class ImClientReceiveOfflineTest {
    @TempDir
    Path dir;

    private ClientOptions options() {
        return ClientOptions.of(URI.create("ws://127.0.0.1:1/ws"), "tok-1", dir);
    }

    @Test
    void exposesTheStoredEventsAndCursorsOfStateDir() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c-ab", 1), ev("c-ab", 3)));
        try (ImClient c = ImClient.open(options())) {
            assertEquals(1, c.cursor("c-ab"));
            assertEquals(0, c.cursor("c-unknown"));
            assertEquals(Map.of("c-ab", 1L), c.cursors());
            assertEquals(List.of(1L, 3L), c.events("c-ab").stream().map(ReceivedEvent::seq).toList());
            assertThrows(ConnectionLostException.class, () -> c.syncNow("c-ab"));
        }
    }

    private static Event ev(String conv, long seq) {
        return new Event(conv, seq, "msg", "m-" + seq, "u-ana", "cm-" + seq, "body " + seq, 1000 + seq);
    }

    @Test
    void corruptEventStoreFailsOpenNamingTheFile() throws IOException {
        Files.writeString(dir.resolve(DurableEventStore.STATE_FILE), "{\"version\":1,");
        IOException e = assertThrows(IOException.class, () -> ImClient.open(options()));
        assertTrue(e.getMessage().contains(DurableEventStore.STATE_FILE), e.getMessage());
    }

    @Test
    void receiveOptionsAreValidated() {
        ClientOptions o = options();
        assertEquals(ClientOptions.DEFAULT_ACK_DELAY, o.ackDelay());
        assertTrue(o.autoReceive());
        assertThrows(IllegalArgumentException.class, () -> o.withAckDelay(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> o.withSyncLimit(0));
        assertThrows(IllegalArgumentException.class, () -> o.withSyncLimit(501));
        assertEquals(2, o.withSyncLimit(2).syncLimit());
    }
}
