package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.PendingSend;
import im.client.api.ReceivedEvent;
import im.protocol.Event;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Edits and recalls in the SQLite store (docs/protocol.md, "Edit and recall"): applied idempotently by
 * seq in any order, the latest edit's text in what the app reads, and a recall's body gone from the
 * store, the search index and every later arrival of the original.
 */
class LocalStoreEditRecallTest {
    @TempDir
    Path dir;
    private LocalStore open;

    @AfterEach
    void closeStore() {
        if (open != null) {
            open.close();
        }
    }

    private LocalStore store() throws IOException {
        if (open != null) {
            open.close();
        }
        open = LocalStore.open(dir);
        return open;
    }

    private static Event msg(long seq, String body) {
        return new Event("c", seq, Event.MSG, "m-" + seq, "u-ana", "cm-" + seq, body, 1_700_000_000_000L + seq);
    }

    private static Event change(long seq, String kind, long ref, String body) {
        return new Event("c", seq, kind, "m-" + seq, "u-ana", "cm-" + seq, body, 1_700_000_000_000L + seq, 0, ref, false);
    }

    private static Event tombstone(long seq) {
        return new Event("c", seq, Event.MSG, "m-" + seq, "u-ana", "cm-" + seq, "", 1_700_000_000_000L + seq, 0, 0, true);
    }

    @Test
    void theAppReadsAMessageWithItsLatestEditAndNotTheEditsAsMessagesOfTheirOwn() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(msg(1, "helo wrld"), msg(2, "other"), change(4, Event.EDIT, 1, "hello world, final")));
        s.applyPushes(List.of(change(3, Event.EDIT, 1, "hello world")));   // the older edit arrives last
        List<ReceivedEvent> page = s.eventsAfter("c", 0, 50);
        assertEquals(List.of(1L, 2L), page.stream().map(ReceivedEvent::seq).toList(), "edits are shown in their message");
        assertEquals(List.of("hello world, final", "other"), page.stream().map(ReceivedEvent::text).toList(), "the highest seq wins");
        assertEquals("helo wrld", page.get(0).body(), "the original is kept: the history");
        assertEquals(4, s.cursor("c"), "the cursor moves over edits like any event");
        assertEquals(List.of(1L, 2L, 3L, 4L), s.events("c").stream().map(ReceivedEvent::seq).toList(), "the log holds every event");
        assertEquals("hello world, final", s.conversations(null, 10).get(0).last().text(),
                "the conversation list shows the message the last event changed");
        assertEquals(List.of(1L), s.search("final", "c", null, 10).stream().map(ReceivedEvent::seq).toList(),
                "a hit in an edit is its message");
        assertEquals(List.of(1L), s.search("hello", null, null, 10).stream().map(ReceivedEvent::seq).toList(), "listed once");
        assertEquals(List.of("helo wrld", "hello world", "hello world, final"), s.editHistory("c", 1).stream().map(ReceivedEvent::body).toList(),
                "the history: as sent, then each edit in seq order");
        assertEquals(List.of(), s.editHistory("c", 9), "not held");
    }

    @Test
    void aRecallEmptiesTheMessageAndItsEditsInTheStoreAndTheIndexAndSurvivesReopen() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(msg(1, "the secret plan"), change(2, Event.EDIT, 1, "the secret plan, edited")));
        for (int i = 3; i < 3 + LocalStore.FTS_CHUNK; i++) {
            s.applyPushes(List.of(msg(i, "filler " + i)));   // the secret is indexed by a chunk by now
        }
        assertEquals(1, s.search("secret", "c", null, 10).size());
        long recall = 3 + LocalStore.FTS_CHUNK;
        s.applyPushes(List.of(change(recall, Event.RECALL, 1, "")));
        assertEquals(List.of(), s.search("secret", "c", null, 10), "out of the index");
        ReceivedEvent tomb = s.eventsAfter("c", 0, 1).get(0);
        assertEquals(List.of("", "", true), List.of(tomb.body(), tomb.text(), tomb.recalled()));
        assertTrue(s.events("c").get(1).recalled() && s.events("c").get(1).body().isEmpty(), "its edit too");
        s.applyPushes(List.of(msg(1, "the secret plan"), change(2, Event.EDIT, 1, "the secret plan, edited")));   // repeated pushes
        s = store();
        assertEquals("", s.events("c").get(0).body(), "after a reopen, and the repeats were no-ops");
        assertEquals(List.of(), s.search("secret", null, null, 10));
        open.close();
        open = null;
        for (Path f : java.nio.file.Files.list(dir).toList()) {   // the database and any WAL left
            String raw = new String(java.nio.file.Files.readAllBytes(f), java.nio.charset.StandardCharsets.ISO_8859_1);
            assertEquals(-1, raw.indexOf("the secret plan"), "no recalled text is left in " + f.getFileName() + " (secure_delete)");
        }
    }

    @Test
    void aMessageOrEditArrivingAfterItsRecallIsStoredRecalled() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(change(5, Event.RECALL, 2, "")));   // the recall first, out of order
        LocalStore.Result r = s.applyPushes(List.of(msg(2, "too late"), change(3, Event.EDIT, 2, "still too late")));
        assertEquals(List.of("", ""), r.added().stream().map(ReceivedEvent::body).toList(), "what the listeners get is the tombstone");
        assertTrue(r.added().stream().allMatch(ReceivedEvent::recalled));
        assertEquals(List.of(), s.search("late", null, null, 10));
        s = store();
        LocalStore.Result again = s.applyPushes(List.of(msg(7, "x"), change(8, Event.RECALL, 7, "")));
        assertEquals(2, again.added().size());
        assertEquals("", s.events("c").stream().filter(e -> e.seq() == 7).findFirst().orElseThrow().body(),
                "a message and its recall in one batch");
    }

    @Test
    void aTombstoneFromTheServerIsStoredAsIs() throws IOException {
        LocalStore s = store();
        s.applyPage("c", 0, List.of(tombstone(1), msg(2, "b")), false, 2);
        ReceivedEvent t = s.eventsAfter("c", 0, 10).get(0);
        assertEquals(List.of("", true), List.of(t.text(), t.recalled()));
        assertNull(t.edited());
        assertEquals(2, s.cursor("c"));
    }

    @Test
    void editsAndRecallsWaitInTheOutboxWithTheirKindAndRef() throws IOException {
        LocalStore s = store();
        s.outboxAdd(new PendingSend("k1", "c", "new text", 1L, 0, Event.EDIT, 4));
        s.outboxAdd(new PendingSend("k2", "c", "", 2L, 0, Event.RECALL, 4));
        s = store();
        assertEquals(List.of(new PendingSend("k1", "c", "new text", 1L, 0, Event.EDIT, 4), new PendingSend("k2", "c", "", 2L, 0, Event.RECALL, 4)),
                s.outbox());
    }
}
