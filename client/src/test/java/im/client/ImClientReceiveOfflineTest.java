package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ConversationSummary;
import im.client.api.LocalStoreException;
import im.client.api.ReadStatus;
import im.client.api.ReceivedEvent;
import im.client.internal.LocalStore;
import im.protocol.Event;
import im.protocol.ReadState;
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
        try (LocalStore s = LocalStore.open(dir)) {
            s.applyPushes(List.of(ev("c-ab", 1), ev("c-ab", 3)));
        }
        try (ImClient c = ImClient.open(options())) {
            assertEquals(1, c.cursor("c-ab"));
            assertEquals(0, c.cursor("c-unknown"));
            assertEquals(Map.of("c-ab", 1L), c.cursors());
            assertEquals(List.of(1L, 3L), c.events("c-ab").stream().map(ReceivedEvent::seq).toList());
            assertThrows(ConnectionLostException.class, () -> c.syncNow("c-ab"));
        }
    }

    private static Event ev(String conv, long seq) {
        return ev(conv, seq, "u-ana", "body " + seq, 1000 + seq);
    }

    private static Event ev(String conv, long seq, String sender, String body, long at) {
        return new Event(conv, seq, "msg", "m-" + conv + "-" + seq, sender, "cm-" + seq, body, at);
    }

    @Test
    void corruptEventStoreFailsOpenNamingTheFile() throws IOException {
        Path file = dir.resolve(LocalStore.FILE_NAME);
        Files.writeString(file, "SQLite format 2 but not really a database, just long enough for a header ".repeat(3));
        LocalStoreException e = assertThrows(LocalStoreException.class, () -> ImClient.open(options()));
        assertEquals(LocalStoreException.Problem.DAMAGED, e.problem());
        assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
        // The lock of the state directory was released: after moving the file away, the client opens.
        Files.move(file, dir.resolve("client.db.damaged"));
        ImClient.open(options()).close();
    }

    /** Three conversations; u-bo is the device's user, so its own messages are never unread. */
    private void threeConversations() throws IOException {
        try (LocalStore s = LocalStore.open(dir)) {
            s.selfUser("u-bo");
            List<Event> batch = new java.util.ArrayList<>();
            for (int i = 1; i <= 120; i++) {
                batch.add(ev("c-long", i, i % 3 == 0 ? "u-bo" : "u-ana", "long talk " + i + (i == 77 ? " about zebras" : ""), 10_000 + i));
            }
            s.applyPushes(batch);
            s.applyPushes(List.of(ev("c-old", 1, "u-ana", "old news", 500)));
            s.applyPushes(List.of(ev("c-new", 1, "u-cy", "Zebra crossing ahead", 50_000), ev("c-new", 2, "u-bo", "ok", 50_001)));
        }
    }

    @Test
    void theConversationListShowsTheLastMessageAndUnreadCountMostRecentFirstInPages() throws IOException {
        threeConversations();
        try (ImClient c = ImClient.open(options())) {
            List<ConversationSummary> first = c.conversations(null, 2);
            assertEquals(List.of("c-new", "c-long"), first.stream().map(ConversationSummary::conv).toList());
            assertEquals("ok", first.get(0).last().body());
            assertEquals(1, first.get(0).unread(), "u-cy's message; u-bo's own one does not count");
            assertEquals(80, first.get(1).unread(), "120 messages, a third of them from u-bo");
            assertEquals(120, first.get(1).last().seq());
            List<ConversationSummary> second = c.conversations(first.get(1), 2);
            assertEquals(List.of("c-old"), second.stream().map(ConversationSummary::conv).toList());
            assertEquals(List.of(), c.conversations(second.get(0), 2));
        }
        try (LocalStore s = LocalStore.open(dir)) {
            assertTrue(s.applyReadState("c-long", new ReadState(60, 40, 120)), "61..120 hold 40 messages from others");
            assertFalse(s.applyReadState("c-long", new ReadState(10, 80, 120)), "a lower read cursor is ignored");
        }
        try (ImClient c = ImClient.open(options())) {
            ConversationSummary row = c.conversations(null, 10).get(1);
            assertEquals("c-long", row.conv());
            assertEquals(60, row.readSeq(), "the server's read cursor");
            assertEquals(40, row.unread());
            assertEquals(new ReadStatus("c-long", 60, 40), c.readStatus("c-long"));
            assertEquals(1 + 40 + 1, c.unreadTotal(), "c-new, c-long, c-old");
        }
    }

    @Test
    void aConversationIsPagedFromTheLocalStoreBeforeAndAfterASeq() throws IOException {
        threeConversations();
        try (ImClient c = ImClient.open(options())) {
            assertEquals(java.util.stream.LongStream.rangeClosed(71, 120).boxed().toList(),
                    c.eventsBefore("c-long", Long.MAX_VALUE, 50).stream().map(ReceivedEvent::seq).toList(), "the latest page");
            assertEquals(java.util.stream.LongStream.rangeClosed(21, 70).boxed().toList(),
                    c.eventsBefore("c-long", 71, 50).stream().map(ReceivedEvent::seq).toList(), "the page above it");
            assertEquals(List.of(1L, 2L, 3L), c.eventsBefore("c-long", 4, 50).stream().map(ReceivedEvent::seq).toList());
            assertEquals(List.of(118L, 119L, 120L), c.eventsAfter("c-long", 117, 50).stream().map(ReceivedEvent::seq).toList());
            assertEquals(List.of(), c.eventsBefore("c-unknown", Long.MAX_VALUE, 50));
            assertThrows(IllegalArgumentException.class, () -> c.eventsBefore("c-long", 10, 0));
            assertThrows(IllegalArgumentException.class, () -> c.eventsBefore("c-long", 10, 1001));
        }
    }

    @Test
    void searchFindsWordsAndPrefixesNewestFirstAndPages() throws IOException {
        threeConversations();
        try (ImClient c = ImClient.open(options())) {
            List<ReceivedEvent> hits = c.search("zebra", null, null, 10);
            assertEquals(List.of("c-new", "c-long"), hits.stream().map(ReceivedEvent::conv).toList(), "prefix, any case, newest first");
            assertEquals(List.of("c-long"), c.search("zebra", null, hits.get(0), 10).stream().map(ReceivedEvent::conv).toList());
            assertEquals(List.of(77L), c.search("about zeb", "c-long", null, 10).stream().map(ReceivedEvent::seq).toList());
            assertEquals(List.of(), c.search("zebra", "c-old", null, 10));
            assertEquals(List.of(), c.search("   ", null, null, 10));
            assertEquals(List.of(), c.search("\"AND OR NOT (*", null, null, 10), "operators are plain words, never a syntax error");
            assertEquals(5, c.search("talk", "c-long", null, 5).size());
        }
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
