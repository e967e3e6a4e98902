package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.LocalStoreException;
import im.client.api.ReadStatus;
import im.client.api.ReceivedEvent;
import im.protocol.CaughtUpRange;
import im.protocol.Event;
import im.protocol.ReadState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The receive side of the SQLite store: cursors, duplicates, sync pages, reopen, crashes and damage, on a real file. */
class LocalStoreTest {
    @TempDir
    Path dir;
    private LocalStore open;

    @AfterEach
    void closeStore() {
        if (open != null) {
            open.close();
        }
    }

    static Event ev(String conv, long seq) {
        return new Event(conv, seq, Event.MSG, "m-" + seq, "u-ana", "cm-" + seq, "body " + seq, 1_700_000_000_000L + seq);
    }

    private LocalStore store() throws IOException {
        return store(dir);
    }

    private LocalStore store(Path d) throws IOException {
        if (open != null) {
            open.close();
        }
        open = LocalStore.open(d);
        return open;
    }

    private static List<Long> seqs(LocalStore s, String conv) throws IOException {
        return s.events(conv).stream().map(ReceivedEvent::seq).toList();
    }

    @Test
    void holdingFiveAndSevenWithoutSixKeepsTheCursorAtFiveUntilSixArrives() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 3), ev("c", 4), ev("c", 5)));
        assertEquals(5, s.cursor("c"));
        LocalStore.Result r = s.applyPushes(List.of(ev("c", 7)));
        assertEquals(5, s.cursor("c"), "7 without 6 keeps the cursor");
        assertEquals(Map.of(), r.advanced());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 7L), seqs(s, "c"), "7 is stored anyway");
        r = s.applyPushes(List.of(ev("c", 6)));
        assertEquals(7, s.cursor("c"), "6 fills the gap");
        assertEquals(Map.of("c", 7L), r.advanced());
    }

    @Test
    void duplicatesAreAppliedOnce() throws IOException {
        LocalStore s = store();
        assertEquals(2, s.applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 1))).added().size());
        LocalStore.Result r = s.applyPushes(List.of(ev("c", 2), ev("c", 1)));
        assertTrue(r.added().isEmpty());
        r = s.applyPage("c", 0, List.of(ev("c", 1), ev("c", 2)), false, 2);
        assertTrue(r.added().isEmpty(), "a sync over stored events adds nothing");
        assertEquals(List.of(1L, 2L), seqs(s, "c"));
        assertEquals(2, s.cursor("c"));
    }

    @Test
    void outOfOrderFillAdvancesOverEverythingHeld() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 4)));
        s.applyPushes(List.of(ev("c", 2), ev("c", 3)));
        assertEquals(0, s.cursor("c"));
        s.applyPushes(List.of(ev("c", 1)));
        assertEquals(4, s.cursor("c"));
        assertEquals(List.of(1L, 2L, 3L, 4L), seqs(s, "c"));
    }

    @Test
    void pageWithoutMoreAdvancesToHeadOverInvisibleSeqs() throws IOException {
        LocalStore s = store();
        // visible: 3 (join) .. 5; then 9; head 10 (6..8 and 10 invisible to this user)
        s.applyPage("c", 0, List.of(ev("c", 3), ev("c", 4), ev("c", 5), ev("c", 9)), false, 10);
        assertEquals(10, s.cursor("c"));
    }

    @Test
    void aCatchupPageStoresEachConversationsRangeAsASyncPageInOneGo() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("a", 1), ev("a", 2)));
        s.applyPushes(List.of(ev("c", 1)));
        LocalStore.Result r = s.applyCatchUp(List.of(ev("a", 3), ev("b", 3), ev("b", 5), ev("c", 5)), List.of(
                new CaughtUpRange("a", 2, 4),     // 4 invisible: the cursor passes over it
                new CaughtUpRange("b", 0, 5),     // 1, 2, 4 invisible
                new CaughtUpRange("c", 3, 5)));   // starts above the cursor (1): not contiguous
        assertEquals(4, s.cursor("a"));
        assertEquals(5, s.cursor("b"));
        assertEquals(1, s.cursor("c"), "(1,3] is not covered");
        assertEquals(List.of(1L, 5L), seqs(s, "c"));
        assertEquals(4, r.added().size());
        assertThrows(IllegalArgumentException.class, () -> s.applyCatchUp(List.of(ev("d", 2)), List.of(new CaughtUpRange("d", 2, 3))),
                "an event outside the ranges the page names");
    }

    @Test
    void pageWithMoreAdvancesToItsLastSeqOnly() throws IOException {
        LocalStore s = store();
        s.applyPage("c", 0, List.of(ev("c", 3), ev("c", 5)), true, 20);
        assertEquals(5, s.cursor("c"));
        s.applyPage("c", 5, List.of(ev("c", 8)), false, 12);
        assertEquals(12, s.cursor("c"));
    }

    @Test
    void pageWhoseAfterIsAboveTheCursorDoesNotAdvanceIt() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        s.applyPage("c", 4, List.of(ev("c", 5), ev("c", 6)), false, 9);
        assertEquals(2, s.cursor("c"), "(2,4] is not covered");
        assertEquals(List.of(1L, 2L, 5L, 6L), seqs(s, "c"));
        s.applyPage("c", 2, List.of(ev("c", 3), ev("c", 4)), true, 9);
        assertEquals(6, s.cursor("c"), "the page closes (2,4], and 5, 6 are held");
    }

    @Test
    void pageAdjacentToAPushedPrefixKeepsHeldEventsAbove() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 9)));
        s.applyPage("c", 1, List.of(ev("c", 4)), false, 8); // an older snapshot: head 8
        assertEquals(9, s.cursor("c"), "up to head 8 then the held 9");
    }

    @Test
    void pushesAfterAPageThatMovedTheCursorPastEveryStoredSeqAdvanceItAndFillGaps() throws IOException {
        LocalStore s = store();
        s.applyPage("c", 0, List.of(ev("c", 3)), false, 10); // cursor 10, highest stored seq 3
        assertEquals(Map.of("c", 11L), s.applyPushes(List.of(ev("c", 11))).advanced());
        assertEquals(Map.of(), s.applyPushes(List.of(ev("c", 13))).advanced(), "13 without 12 keeps the cursor");
        assertTrue(s.applyPushes(List.of(ev("c", 11))).added().isEmpty(), "11 again is a duplicate");
        assertEquals(Map.of("c", 13L), s.applyPushes(List.of(ev("c", 12))).advanced(), "12 fills the gap below the held 13");
        assertEquals(List.of(3L, 11L, 12L, 13L), seqs(s, "c"));
        assertEquals(13, store().cursor("c"));
    }

    @Test
    void survivesReopen() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("a", 1), ev("a", 2), ev("a", 4), ev("b", 1)));
        s.applyPage("b", 1, List.of(), false, 3);
        Event join = new Event("a", 5, Event.JOIN, "m-j", "u-bo", null, null, 5);
        s.applyPushes(List.of(join));
        List<ReceivedEvent> before = s.events("a");
        LocalStore r = store();
        assertEquals(Map.of("a", 2L, "b", 3L), r.cursors());
        assertEquals(before, r.events("a"));
        assertEquals(List.of(1L, 2L, 4L, 5L), seqs(r, "a"));
        assertEquals(ReceivedEvent.of(join), r.events("a").get(3));
        r.applyPushes(List.of(ev("a", 3)));
        assertEquals(5, store().cursor("a"));
    }

    @Test
    void searchFindsEveryStoredEventOnceWhetherIndexedInABatchChunkOrAtSearchTime() throws IOException {
        LocalStore s = store();
        int n = LocalStore.FTS_CHUNK * 2 + 10; // two chunks indexed while storing, ten left for the search
        for (int i = 1; i <= n; i++) {
            s.applyPushes(List.of(new Event("c", i, Event.MSG, "m-" + i, "u-ana", null, "word" + (i % 3) + " n" + i, i)));
        }
        long prefixed = java.util.stream.IntStream.rangeClosed(1, n).filter(i -> ("n" + i).startsWith("n1")).count();
        List<ReceivedEvent> hits = s.search("n1", "c", null, 1000);
        assertEquals(prefixed, hits.size(), "the last word is a prefix: n1, n10, n100, ...");
        assertEquals(1L, hits.get(hits.size() - 1).seq(), "newest first; the first event was indexed in the first chunk");
        assertEquals(List.of((long) n), s.search("n" + n, null, null, 10).stream().map(ReceivedEvent::seq).toList());
        assertEquals((n + 2) / 3, s.search("word1", null, null, 1000).size(), "each hit once");
        s.applyPushes(List.of(new Event("c", n + 1, Event.MSG, "m-x", "u-ana", null, "word1 late", n + 1)));
        LocalStore r = store();
        assertEquals((n + 2) / 3 + 1, r.search("word1", null, null, 1000).size(), "after reopen: each hit once, the late one too");
    }

    /** A bulk join's count (the users it added at once) is kept with the event: as received, in every read, after a reopen. */
    @Test
    void aBulkJoinKeepsItsCount() throws IOException {
        LocalStore s = store();
        Event bulk = new Event("g", 1, Event.JOIN, "m-1", "u-ana", null, "", 1_700_000_000_001L, 500);
        LocalStore.Result r = s.applyPushes(List.of(bulk, new Event("g", 2, Event.JOIN, "m-2", "u-cy", null, "", 1_700_000_000_002L)));
        assertEquals(List.of(500, 0), r.added().stream().map(ReceivedEvent::count).toList());
        assertEquals(bulk, r.added().get(0).toEvent());
        s.applyPage("h", 0, List.of(new Event("h", 3, Event.JOIN, "m-3", "u-bo", null, "", 1_700_000_000_003L, 2)), false, 3);
        LocalStore again = store();
        assertEquals(List.of(500, 0), again.events("g").stream().map(ReceivedEvent::count).toList());
        assertEquals(2, again.eventsAfter("h", 0, 10).get(0).count());
        assertEquals(2, again.conversations(null, 10).get(0).last().count(), "the conversation list's last event");
    }

    /**
     * Search lists hits newest stored first across conversations (the insertion number, not the key,
     * which orders by conversation), and pages on with {@code before}.
     */
    @Test
    void searchListsTheNewestStoredFirstAcrossConversationsAndPagesOn() throws IOException {
        LocalStore s = store();
        List<String> stored = new java.util.ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            String conv = i % 2 == 0 ? "a" : "z";   // numbers b 1, a 2, z 3: key order is not the order stored
            if (i == 1) {
                conv = "b";
            }
            s.applyPushes(List.of(new Event(conv, i, Event.MSG, "m-" + i, "u-ana", null, "needle " + i, i)));
            stored.add(conv + i);
        }
        Collections.reverse(stored);
        List<ReceivedEvent> first = s.search("needle", null, null, 4);
        assertEquals(stored.subList(0, 4), first.stream().map(e -> e.conv() + e.seq()).toList());
        assertEquals(stored.subList(4, 6), s.search("needle", null, first.get(3), 4).stream().map(e -> e.conv() + e.seq()).toList());
        assertEquals(List.of("a6", "a4", "a2"), s.search("needle", "a", null, 10).stream().map(e -> e.conv() + e.seq()).toList());
        assertEquals(List.of(), s.search("needle", "unknown", null, 10));
    }

    /**
     * Events are keyed by conversation number and seq: conversations with the same seqs do not mix, the
     * highest seq the key holds is stored and paged, one above it is refused before anything is written,
     * and a cursor or read head above it (the server's) is taken as the end of the range.
     */
    @Test
    void eachConversationIsItsOwnRangeOfKeysUpToTheHighestSeqAndSeqsBeyondItAreRefused() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("a", 1), ev("b", 1), ev("a", 2), ev("b", 2), ev("b", 3)));
        assertEquals(List.of(1L, 2L), seqs(s, "a"));
        assertEquals(List.of(1L, 2L, 3L), seqs(s, "b"));
        assertEquals(List.of(2L), s.eventsBefore("a", 3, 1).stream().map(ReceivedEvent::seq).toList());
        assertEquals(List.of(), s.eventsAfter("a", 2, 10), "b's 3 is not a's");
        long max = LocalStore.MAX_SEQ;
        s.applyPushes(List.of(ev("a", max)));
        assertEquals(List.of(max), s.eventsBefore("a", Long.MAX_VALUE, 1).stream().map(ReceivedEvent::seq).toList());
        assertEquals(List.of(max), s.eventsAfter("a", max - 1, 10).stream().map(ReceivedEvent::seq).toList());
        assertEquals(List.of(1L, 2L), s.eventsBefore("a", 3, 10).stream().map(ReceivedEvent::seq).toList());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> s.applyPushes(List.of(ev("b", 4), ev("b", max + 1))));
        assertTrue(e.getMessage().contains("b#" + (max + 1)), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> s.applyPushes(List.of(ev("c", 0))));
        assertEquals(List.of(1L, 2L, 3L), seqs(s, "b"), "nothing of the refused batch was stored");
        assertEquals(Map.of("a", 2L, "b", 3L), s.cursors());
        assertTrue(s.applyReadState("b", new ReadState(Long.MAX_VALUE, 0, Long.MAX_VALUE)));
        assertEquals(new ReadStatus("b", Long.MAX_VALUE, 0), s.readStatus("b"));
        s.applyPage("c", 0, List.of(), false, Long.MAX_VALUE);
        assertEquals(Long.MAX_VALUE, s.cursor("c"), "a head above the key range moves the cursor all the same");
        LocalStore r = store();
        assertEquals(List.of(1L, 2L, max), seqs(r, "a"));
        assertEquals(Map.of("a", 2L, "b", 3L, "c", Long.MAX_VALUE), r.cursors());
    }

    /**
     * A gap filled at or below a conversation row's marks (after its row and its search chunk were
     * written) is reflected in the row and indexed by its own batch: after a kill the unread count,
     * the cursor and the search see it, and nothing is counted twice.
     */
    @Test
    void aGapFilledBelowTheRowsMarksIsCountedAndSearchableAfterAKill() throws IOException {
        LocalStore s = store();
        s.selfUser("u-me");
        s.applyPushes(List.of(from("u-bob", "c", 1)));
        for (long seq = 3; seq < 3 + LocalStore.FTS_CHUNK; seq++) {   // 2 missing; the chunk indexes and writes the rows
            s.applyPushes(List.of(from("u-bob", "c", seq)));
        }
        long last = 2 + LocalStore.FTS_CHUNK;
        assertEquals(1, s.cursor("c"));
        s.applyPushes(List.of(new Event("c", 2, Event.MSG, "m-2", "u-bob", "cm-2", "the needle", 1_700_000_000_002L)));
        assertEquals(last, s.cursor("c"));
        s.applyPushes(List.of(from("u-bob", "c", last + 1)));   // above the marks: not written, replayed at open
        Path killed = crashCopy("gap");   // before the search below, which indexes 258 and 259 and writes the rows
        assertEquals(List.of(2L), s.search("needle", null, null, 10).stream().map(ReceivedEvent::seq).toList());
        ReadStatus status = s.readStatus("c");
        assertEquals(new ReadStatus("c", 0, last + 1), status);
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(last + 1, r.cursor("c"));
            assertEquals(status, r.readStatus("c"));
            assertEquals(List.of(2L), r.search("needle", "c", null, 10).stream().map(ReceivedEvent::seq).toList());
            assertEquals(1, r.search("body " + (last + 1), null, null, 10).size(), "the replayed event is indexed by the search");
        }
    }

    @Test
    void theNextPageOfTheConversationListStartsBelowTheRowAsTheAppSawItEvenIfThatRowMovedUp() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(new Event("c-1", 1, Event.MSG, "m-1", "u-ana", null, "a", 100)));
        s.applyPushes(List.of(new Event("c-2", 1, Event.MSG, "m-2", "u-ana", null, "b", 200)));
        s.applyPushes(List.of(new Event("c-3", 1, Event.MSG, "m-3", "u-ana", null, "c", 300)));
        List<im.client.api.ConversationSummary> first = s.conversations(null, 2);
        assertEquals(List.of("c-3", "c-2"), first.stream().map(im.client.api.ConversationSummary::conv).toList());
        s.applyPushes(List.of(new Event("c-2", 2, Event.MSG, "m-4", "u-ana", null, "d", 400))); // c-2 moves to the top
        assertEquals(List.of("c-1"), s.conversations(first.get(1), 2).stream().map(im.client.api.ConversationSummary::conv).toList(),
                "no row of the first page again");
        assertEquals(List.of("c-2", "c-3", "c-1"), s.conversations(null, 10).stream().map(im.client.api.ConversationSummary::conv).toList());
    }

    // ------------------------------------------------------------------ crashes and damage

    /** The files of the store as a process killed right now leaves them (the WAL is not checkpointed while open). */
    private Path crashCopy(String name) throws IOException {
        return crashCopy(dir, name);
    }

    /** The files of the store in {@code from} (its database and WAL) copied as a killed process leaves them. */
    private Path crashCopy(Path from, String name) throws IOException {
        Path copy = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-" + name));
        for (String f : List.of(LocalStore.FILE_NAME, LocalStore.FILE_NAME + "-wal")) {
            if (Files.exists(from.resolve(f))) {
                Files.copy(from.resolve(f), copy.resolve(f));
            }
        }
        return copy;
    }

    @Test
    void aKilledProcessLeavesEveryCommittedBatchAndItsCursor() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        s.applyPushes(List.of(ev("c", 4)));
        Path killed = crashCopy("killed"); // no close, no checkpoint: only the fsynced WAL holds the batches
        assertTrue(Files.size(killed.resolve(LocalStore.FILE_NAME + "-wal")) > 0, "the batches are in the WAL");
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(2, r.cursor("c"));
            assertEquals(List.of(1L, 2L, 4L), seqs(r, "c"));
        }
    }

    /**
     * Makes a closed store of this SDK (its rows written) what schema 1 wrote: events keyed by an id
     * with a unique (conv, seq), all in a search index with the events as its content; no read state
     * columns, no marks, no edits and recalls.
     */
    static void asSchemaOne(Statement st) throws java.sql.SQLException {
        st.execute("DROP INDEX convs_no");
        for (String col : List.of("read_head", "read_unread", "read_known", "no", "synced_seq", "fts_seq")) {
            st.execute("ALTER TABLE convs DROP COLUMN " + col);
        }
        st.execute("DROP TABLE events_fts");
        st.execute("DROP TABLE events_fts_content");   // SQLite 3.53's FTS5 leaves a contentless_unindexed table's content behind
        st.execute("""
                CREATE TABLE events1 (
                  id INTEGER PRIMARY KEY,
                  conv TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, mid TEXT NOT NULL,
                  sender TEXT NOT NULL, cmid TEXT, body TEXT, at INTEGER NOT NULL,
                  UNIQUE (conv, seq))""");
        st.execute("INSERT INTO events1 SELECT n, conv, seq, kind, mid, sender, cmid, body, at FROM events");
        st.execute("DROP TABLE events");
        st.execute("ALTER TABLE events1 RENAME TO events");
        st.execute("CREATE VIRTUAL TABLE events_fts USING fts5 (body, content='events', content_rowid='id')");
        st.execute("INSERT INTO events_fts (events_fts) VALUES ('rebuild')");
        st.execute("DELETE FROM meta WHERE key = 'next_n'");
        st.execute("INSERT OR REPLACE INTO meta (key, value) SELECT 'fts_indexed', coalesce(max(id), 0) FROM events");
        for (String col : List.of("kind", "ref")) {
            st.execute("ALTER TABLE outbox DROP COLUMN " + col);
        }
        st.execute("DELETE FROM meta WHERE key = 'convs_synced'");
        st.execute("PRAGMA user_version = 1");
    }

    static Event from(String sender, String conv, long seq) {
        return new Event(conv, seq, Event.MSG, "m-" + seq, sender, "cm-" + seq, "body " + seq, 1_700_000_000_000L + seq);
    }

    /** Push batches do not write the conversation rows: a killed process's rows lag, and open rebuilds them from the events. */
    @Test
    void aKilledProcessWhoseConversationRowsLagTheEventsReopensWithTheSameCursorsLastMessagesAndUnreadCounts() throws IOException {
        LocalStore s = store();
        s.selfUser("u-me");
        s.applyPage("b", 0, List.of(from("u-bob", "b", 2)), false, 3); // written with its rows: cursor 3 over invisible 1, 3
        s.applyPushes(List.of(from("u-bob", "a", 1), from("u-bob", "a", 2)));
        s.applyReadState("a", new ReadState(1, 0, 1)); // writes the rows
        s.applyPushes(List.of(from("u-bob", "a", 3), from("u-me", "a", 4), from("u-bob", "a", 6))); // 5 missing
        s.applyPushes(List.of(from("u-bob", "b", 4), from("u-bob", "b", 5)));
        s.applyPushes(List.of(from("u-bob", "c", 1)));
        s.applyPushes(List.of(from("u-bob", "d", 2))); // 1 missing: cursor stays 0
        Path killed = crashCopy("lagging"); // before anything below writes the rows
        Map<String, Long> cursors = s.cursors();
        var list = s.conversations(null, 50);
        assertEquals(Map.of("a", 4L, "b", 5L, "c", 1L, "d", 0L), cursors);
        assertEquals(List.of("a", "b", "d", "c"), list.stream().map(c -> c.conv()).toList(), "most recent first");
        assertEquals(List.of(3L, 3L, 1L, 1L), list.stream().map(c -> c.unread()).toList(), "own messages are not unread");
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(cursors, r.cursors());
            assertEquals(list, r.conversations(null, 50));
            r.applyPushes(List.of(from("u-bob", "a", 5)));
            assertEquals(6, r.cursor("a"), "the rebuilt cursor moves on over the stored 6");
            assertEquals(4, r.conversations(null, 50).get(0).unread());
        }
    }

    @Test
    void aStoreOfSchemaOneWhoseRowsReflectEveryEventIsUpgradedWithoutCountingAnythingTwice() throws Exception {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 4)));
        var list = s.conversations(null, 50);
        open.close();
        open = null;
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement()) {
            asSchemaOne(st);
        }
        LocalStore r = store();
        assertEquals(2, r.cursor("c"));
        assertEquals(list, r.conversations(null, 50));
        assertEquals(3, list.get(0).unread(), "the rows counted each event once");
        r.applyPushes(List.of(ev("c", 3)));
        assertEquals(4, r.cursor("c"));
    }

    /**
     * Stores written by the SDK of main at 3ee9762 (schema 1, conversation rows written in every batch):
     * user u-me; a: 1, 2, 4 from u-bob, read up to 1; b: 1 from u-me, 2 from u-bob; c: a sync page
     * (after 0, head 3) holding 2; one outbox entry. "closed" was closed (checkpointed, no WAL);
     * "killed" is a copy taken before that close, everything in its WAL.
     */
    @ParameterizedTest
    @ValueSource(strings = {"closed", "killed"})
    void aStoreWrittenBySchemaOneOfMainOpensWithItsCursorsUnreadCountsOutboxAndSearch(String which) throws Exception {
        Path from = Path.of(LocalStoreTest.class.getResource("/stores/schema1-main-3ee9762/" + which).toURI());
        try (var files = Files.list(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        LocalStore r = store();
        assertEquals(Map.of("a", 2L, "b", 2L, "c", 3L), r.cursors());
        var list = r.conversations(null, 50);
        assertEquals(List.of("a", "c", "b"), list.stream().map(c -> c.conv()).toList(), "most recent first, ties by id descending");
        assertEquals(List.of(2L, 1L, 1L), list.stream().map(c -> c.unread()).toList(), "own messages and read ones are not unread");
        assertEquals(4, list.get(0).last().seq());
        assertEquals(List.of("cm-x"), r.outbox().stream().map(e -> e.cmid()).toList());
        assertEquals(List.of(4L), r.search("body 4", null, null, 10).stream().map(ReceivedEvent::seq).toList());
        r.applyPushes(List.of(from("u-bob", "a", 3), from("u-bob", "a", 5)));
        assertEquals(5, r.cursor("a"));
        Path killed = crashCopy("upgraded-then-killed"); // the rows of this schema lag these pushes
        assertEquals(4, r.conversations(null, 50).get(0).unread());
        r.close();
        open = null;
        try (LocalStore again = LocalStore.open(killed)) {
            assertEquals(Map.of("a", 5L, "b", 2L, "c", 3L), again.cursors());
            assertEquals(4, again.conversations(null, 50).get(0).unread());
        }
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("PRAGMA user_version")) {
            rs.next();
            assertEquals(LocalStore.SCHEMA_VERSION, rs.getInt(1), "upgraded in place");
        }
    }

    /** Copies the files of a store in the test resources into {@link #dir}. */
    private void copyResource(String path) throws Exception {
        Path from = Path.of(LocalStoreTest.class.getResource(path).toURI());
        try (var files = Files.list(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
    }

    private int userVersion(Path d) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + d.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("PRAGMA user_version")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /**
     * Stores written by the SDK of main at 394b5b7 (schema 4: events keyed by an insertion id with a unique
     * (conv, seq), rows lagging up to convs_synced, a search index with the events as its content), by a
     * small program against its LocalStore: user u-me; a: 1, 2 from u-bob, read state (1, 0, 1), 3 from
     * u-bob (which wrote the rows), 4 an edit of 1 ("body a 1 edited"), 5 from u-bob, 6 from u-me, 7 a recall
     * of 2; b: 1 from u-me, 2 from u-bob; c: a sync page (after 0, head 3) holding 2 (which wrote the rows);
     * d: 1, 2 from u-bob; a: 9 from u-bob (8 missing); one outbox entry. "killed" is a copy taken before
     * close: its rows lag d 1, 2 and a 9 (convs_synced 10 of 13 events). "closed" was closed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"closed", "killed"})
    void aStoreWrittenBySchemaFourOfMainOpensWithItsCursorsCountsSearchEditsAndRecalls(String which) throws Exception {
        copyResource("/stores/schema4-main-394b5b7/" + which);
        LocalStore r = store();
        assertEquals(Map.of("a", 7L, "b", 2L, "c", 3L, "d", 2L), r.cursors());
        assertEquals(Map.of("a", new ReadStatus("a", 1, 4), "b", new ReadStatus("b", 0, 1), "c", new ReadStatus("c", 0, 1),
                "d", new ReadStatus("d", 0, 2)), r.readStatuses());
        var list = r.conversations(null, 50);
        assertEquals(List.of("a", "d", "c", "b"), list.stream().map(c -> c.conv()).toList(), "most recent first");
        assertEquals(List.of(4L, 2L, 1L, 1L), list.stream().map(c -> c.unread()).toList());
        assertEquals("body a 9", list.get(0).last().text());
        assertEquals(List.of("a9", "d2", "d1", "c2", "b2", "b1", "a6", "a5", "a1", "a3"),
                r.search("body", null, null, 20).stream().map(e -> e.conv() + e.seq()).toList(),
                "newest stored first, as that SDK stored them; a hit in an edit is its message; the recalled one is gone");
        assertEquals(List.of("a1"), r.search("edited", null, null, 5).stream().map(e -> e.conv() + e.seq()).toList());
        assertEquals(List.of("body a 1", "body a 1 edited"), r.editHistory("a", 1).stream().map(ReceivedEvent::body).toList());
        assertEquals(List.of("1:body a 1 edited", "2:", "3:body a 3", "5:body a 5", "6:body a 6", "9:body a 9"),
                r.eventsAfter("a", 0, 50).stream().map(e -> e.seq() + ":" + e.text()).toList());
        assertTrue(r.eventsAfter("a", 1, 1).get(0).recalled());
        assertEquals(List.of("cm-x"), r.outbox().stream().map(e -> e.cmid()).toList());
        r.applyPushes(List.of(from("u-bob", "a", 8), from("u-bob", "d", 3)));
        assertEquals(9, r.cursor("a"), "8 fills the gap up to the stored 9");
        Path killed = crashCopy("upgraded-then-killed"); // the rows lag 8 and d 3
        Map<String, ReadStatus> statuses = r.readStatuses();
        assertEquals(new ReadStatus("a", 1, 5), statuses.get("a"));
        assertEquals(List.of("d3", "a8"), r.search("body", null, null, 2).stream().map(e -> e.conv() + e.seq()).toList());
        r.close();
        open = null;
        assertEquals(LocalStore.SCHEMA_VERSION, userVersion(dir), "upgraded in place");
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("PRAGMA freelist_count")) {
            rs.next();
            assertEquals(0, rs.getLong(1), "the pages of the tables the upgrade replaced are given back (VACUUM)");
        }
        try (LocalStore again = LocalStore.open(killed)) {
            assertEquals(Map.of("a", 9L, "b", 2L, "c", 3L, "d", 3L), again.cursors());
            assertEquals(statuses, again.readStatuses());
            assertEquals(List.of("d3", "a8", "a9"), again.search("body", null, null, 3).stream().map(e -> e.conv() + e.seq()).toList());
        }
    }

    /**
     * Stores written by the SDK of main at 601fc49 (schema 2: push batches leave the conversation rows
     * lagging up to convs_synced), by a small program against its LocalStore: user u-me; a: 1, 2 from
     * u-bob, read mark 1 (which wrote the rows), 4 from u-bob, then 5 from u-bob and 6 from u-me; b: 1 from
     * u-me, 2 from u-bob; c: a sync page (after 0, head 3) holding 2 (which wrote the rows); d: 1, 2 from
     * u-bob; one outbox entry. "killed" is a copy taken before close: its rows lag a 5, 6 and d (convs_synced
     * 6 of 10 events). "closed" was closed (rows written, checkpointed, no WAL).
     */
    @ParameterizedTest
    @ValueSource(strings = {"closed", "killed"})
    void aStoreWrittenBySchemaTwoOfMainOpensWithItsCursorsUnreadCountsAndLocalReadMark(String which) throws Exception {
        copyResource("/stores/schema2-main-601fc49/" + which);
        LocalStore r = store();
        assertEquals(Map.of("a", 2L, "b", 2L, "c", 3L, "d", 2L), r.cursors());
        var list = r.conversations(null, 50);
        assertEquals(List.of("a", "d", "c", "b"), list.stream().map(c -> c.conv()).toList(), "most recent first");
        assertEquals(List.of(3L, 2L, 1L, 1L), list.stream().map(c -> c.unread()).toList(),
                "each event counted once: own messages and read ones are not unread");
        assertEquals(6, list.get(0).last().seq());
        assertEquals(new ReadStatus("a", 1, 3), r.readStatus("a"), "the local mark and its count, kept");
        assertEquals(7, r.unreadTotal());
        assertEquals(List.of("cm-x"), r.outbox().stream().map(e -> e.cmid()).toList());
        assertEquals(List.of(5L), r.search("body 5", "a", null, 10).stream().map(ReceivedEvent::seq).toList());
        r.applyPushes(List.of(from("u-bob", "a", 3)));
        assertEquals(6, r.cursor("a"), "3 fills the gap up to the stored 6");
        assertEquals(new ReadStatus("a", 1, 4), r.readStatus("a"));
        assertTrue(r.applyReadState("a", new ReadState(2, 2, 4)), "the server's state replaces the local mark");
        assertEquals(new ReadStatus("a", 2, 3), r.readStatus("a"), "2 at head 4, and 5");
        r.applyPushes(List.of(from("u-bob", "a", 7)));
        Path killed = crashCopy("upgraded-then-killed"); // the rows lag 7
        Map<String, ReadStatus> statuses = r.readStatuses();
        assertEquals(new ReadStatus("a", 2, 4), statuses.get("a"));
        list = r.conversations(null, 50);
        r.close();
        open = null;
        assertEquals(LocalStore.SCHEMA_VERSION, userVersion(dir), "upgraded in place");
        try (LocalStore again = LocalStore.open(killed)) {
            assertEquals(Map.of("a", 7L, "b", 2L, "c", 3L, "d", 2L), again.cursors());
            assertEquals(statuses, again.readStatuses());
            assertEquals(list, again.conversations(null, 50));
            assertFalse(again.applyReadState("a", new ReadState(1, 0, 7)), "a server state was applied: a lower cursor is ignored");
        }
    }

    /**
     * A read state costs no transaction of its own (the capacity bench's recipients, reading what
     * they receive, spent a SQLite transaction per {@code readack}): it is applied in memory and
     * written with the rows by the next batch. A kill before that shows the state before, with
     * counts that agree with it (the server gives the newer one again at the next {@code subbed}).
     */
    @Test
    void aReadStateIsWrittenWithTheNextBatchAndAKillBeforeThatShowsTheOneBefore() throws Exception {
        LocalStore s = store();
        s.selfUser("u-me");
        s.applyPushes(List.of(from("u-bob", "a", 1), from("u-bob", "a", 2), from("u-bob", "a", 3)));
        assertTrue(s.applyReadState("a", new ReadState(1, 2, 3)));
        s.applyPushes(List.of(from("u-bob", "a", 4)));   // writes the rows with the state
        long version = dataVersion(s);
        assertTrue(s.applyReadState("a", new ReadState(3, 0, 3)));
        assertTrue(s.applyReadState("b", new ReadState(5, 1, 6)), "a conversation with nothing stored yet");
        assertEquals(version, dataVersion(s), "nothing written: no transaction for a read state");
        assertEquals(new ReadStatus("a", 3, 1), s.readStatus("a"), "4 is above the new state's head");
        assertEquals(new ReadStatus("b", 5, 1), s.readStatus("b"));
        try (LocalStore r = LocalStore.open(crashCopy("before"))) {
            assertEquals(new ReadStatus("a", 1, 3), r.readStatus("a"), "the state before, and 4 counted once on it");
            assertEquals(new ReadStatus("b", 0, 0), r.readStatus("b"));
        }
        s.applyPushes(List.of(from("u-bob", "a", 5)));
        try (LocalStore r = LocalStore.open(crashCopy("after"))) {
            assertEquals(new ReadStatus("a", 3, 2), r.readStatus("a"), "written with the batch: 4 and 5 above its head");
            assertEquals(new ReadStatus("b", 5, 1), r.readStatus("b"));
        }
    }

    private static long dataVersion(LocalStore s) throws Exception {
        return s.rowsWritten();
    }

    /**
     * The unread count now (the state's unread + messages of others above its head) after a kill: the
     * rows lag the events (written every CONV_SYNC_CHUNK events and with a read state), open adds the
     * rest above each row's synced_seq with the head of the state in the row, and a second kill before the rows
     * are written again gives the same.
     */
    @Test
    void unreadCountsAboveTheReadStatesHeadSurviveAKillWhileTheRowsLagAndASecondOneAfterTheReopen() throws Exception {
        LocalStore s = store();
        s.selfUser("u-me");
        assertTrue(s.applyReadState("a", new ReadState(2, 1, 3)), "a state before any event of a");
        s.applyPushes(List.of(from("u-bob", "a", 1), from("u-bob", "a", 2), from("u-bob", "a", 3)));
        s.applyPushes(List.of(from("u-me", "a", 4), from("u-bob", "a", 5)));
        s.applyPushes(List.of(from("u-bob", "a", 5), from("u-bob", "a", 6))); // 5 again: counted once
        int n = LocalStore.CONV_SYNC_CHUNK + 44;
        for (int seq = 1; seq <= n; seq++) {
            s.applyPushes(List.of(from(seq % 10 == 0 ? "u-me" : "u-bob", "c", seq)));
            if (seq == 150) {
                assertTrue(s.applyReadState("c", new ReadState(100, 20, 120)));
            }
        }
        // The rows were written at the chunk's end, and lag the 44 events since: a state applied now
        // recounts above its head and writes every row, or open would add 281..300 to c a second time.
        assertTrue(s.applyReadState("c", new ReadState(200, 30, 280)));
        s.applyPushes(List.of(from("u-bob", "d", 2))); // 1 missing; its transaction writes the rows with c's state
        s.applyPushes(List.of(from("u-me", "c", n + 1))); // this one does not: the rows lag again
        Path killed = crashCopy("lagging");
        Map<String, ReadStatus> statuses = s.readStatuses();
        assertEquals(Map.of("a", new ReadStatus("a", 2, 3), "c", new ReadStatus("c", 200, 30 + 18),
                "d", new ReadStatus("d", 0, 1)), statuses);
        long total = s.unreadTotal();
        Map<String, Long> cursors = s.cursors();
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + killed.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("SELECT (SELECT synced_seq FROM convs WHERE conv = 'c'),"
                     + " (SELECT max(seq) FROM events WHERE conv = 'c')")) {
            rs.next();
            assertTrue(rs.getLong(1) > 0 && rs.getLong(1) < rs.getLong(2), "the killed copy's rows lag: " + rs.getLong(1)
                    + " of " + rs.getLong(2));
        }
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(cursors, r.cursors());
            assertEquals(statuses, r.readStatuses());
            assertEquals(total, r.unreadTotal());
            r.applyPushes(List.of(from("u-bob", "a", 7), from("u-bob", "d", 1)));
            assertEquals(new ReadStatus("a", 2, 4), r.readStatus("a"));
            assertEquals(new ReadStatus("d", 0, 2), r.readStatus("d"));
            statuses = r.readStatuses();
            // Killed again before anything wrote the rows: the marks are where they were.
            Path again = crashCopy(killed, "again");
            try (LocalStore r2 = LocalStore.open(again)) {
                assertEquals(statuses, r2.readStatuses());
                assertTrue(r2.applyReadState("c", new ReadState(n, 0, n)));
                assertEquals(new ReadStatus("c", n, 0), r2.readStatus("c"));
                assertEquals(statuses.get("a"), r2.readStatus("a"), "writing the rows with the state counted nothing twice");
            }
            try (LocalStore r3 = LocalStore.open(again)) {
                assertEquals(new ReadStatus("c", n, 0), r3.readStatus("c"), "closed: the rows were written");
                assertEquals(statuses.get("a"), r3.readStatus("a"));
                assertEquals(statuses.get("d"), r3.readStatus("d"));
            }
        }
    }

    @Test
    void aKilledProcessLeavesEveryCommittedBatchAfterTheWalRestartedSeveralTimes() throws IOException {
        LocalStore s = store();
        int batches = 3 * LocalStore.WAL_CHECKPOINT_PAGES; // a batch writes at least one page: the WAL restarts at least twice
        for (int seq = 1; seq <= batches; seq++) {
            s.applyPushes(List.of(ev("c", seq)));
        }
        Path killed = crashCopy("restarted"); // old frames of earlier WAL generations lie beyond the live ones
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(batches, r.cursor("c"));
            assertEquals(java.util.stream.LongStream.rangeClosed(1, batches).boxed().toList(), seqs(r, "c"));
        }
    }

    @Test
    void aBatchTornByACrashIsCutOffWithItsCursorAndTheCommittedOnesStay() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        long committed = Files.size(dir.resolve(LocalStore.FILE_NAME + "-wal"));
        s.applyPushes(List.of(ev("c", 3), ev("c", 4), ev("c", 5)));
        Path killed = crashCopy("torn");
        Path wal = killed.resolve(LocalStore.FILE_NAME + "-wal");
        long whole = Files.size(wal);
        assertTrue(whole > committed, "the second batch was appended to the WAL");
        // The write of the second batch cut short: only part of its frames reached the disk.
        try (FileChannel ch = FileChannel.open(wal, StandardOpenOption.WRITE)) {
            ch.truncate(committed + (whole - committed) / 2);
        }
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(2, r.cursor("c"), "the torn batch's cursor is not kept");
            assertEquals(List.of(1L, 2L), seqs(r, "c"), "nor its events");
            r.applyPushes(List.of(ev("c", 3)));
            assertEquals(3, r.cursor("c"), "the store goes on from the committed state");
        }
    }

    @Test
    void aLastBatchWhoseBytesDoNotMatchTheirChecksumIsCutOff() throws IOException {
        LocalStore s = store();
        s.applyPushes(List.of(ev("c", 1)));
        s.applyPushes(List.of(ev("c", 2)));
        Path killed = crashCopy("garbled");
        Path wal = killed.resolve(LocalStore.FILE_NAME + "-wal");
        try (FileChannel ch = FileChannel.open(wal, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {0x5a, 0x5a, 0x5a, 0x5a}), Files.size(wal) - 100); // inside the last frame
        }
        try (LocalStore r = LocalStore.open(killed)) {
            assertEquals(1, r.cursor("c"));
            assertEquals(List.of(1L), seqs(r, "c"));
        }
    }

    @Test
    void aFileThatIsNotADatabaseFailsOpenNamingItAndIsLeftAsItIs() throws IOException {
        Path file = dir.resolve(LocalStore.FILE_NAME);
        Files.writeString(file, "{\"version\":1,\"entries\":[]} and more bytes than a header ".repeat(4));
        byte[] before = Files.readAllBytes(file);
        LocalStoreException e = assertThrows(LocalStoreException.class, () -> LocalStore.open(dir));
        assertEquals(LocalStoreException.Problem.DAMAGED, e.problem());
        assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
        assertTrue(java.util.Arrays.equals(before, Files.readAllBytes(file)), "not recreated");
    }

    @Test
    void aDatabaseCutShortFailsOpen() throws IOException {
        LocalStore s = store();
        for (int i = 1; i <= 300; i++) {
            s.applyPushes(List.of(new Event("c", i, Event.MSG, "m-" + i, "u-ana", null, "x".repeat(500), i)));
        }
        s.close(); // checkpointed into client.db, no WAL left
        Path file = dir.resolve(LocalStore.FILE_NAME);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() / 2);
        }
        LocalStoreException e = assertThrows(LocalStoreException.class, () -> LocalStore.open(dir));
        assertEquals(LocalStoreException.Problem.DAMAGED, e.problem());
        assertTrue(e.getMessage().contains("cut off"), e.getMessage());
    }

    @Test
    void aDamagedPageIsReportedWhenReadNeverSkipped() throws IOException {
        LocalStore s = store();
        for (int i = 1; i <= 300; i++) {
            s.applyPushes(List.of(new Event("c", i, Event.MSG, "m-" + i, "u-ana", null, "x".repeat(500), i)));
        }
        s.close();
        Path file = dir.resolve(LocalStore.FILE_NAME);
        long size = Files.size(file);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            byte[] junk = new byte[4096];
            java.util.Arrays.fill(junk, (byte) 0xff);
            for (long p = size / 2 / 4096 * 4096; p < size - 4096 * 4; p += 4096 * 3) {
                ch.write(ByteBuffer.wrap(junk), p); // every third page of the second half
            }
        }
        LocalStoreException e = assertThrows(LocalStoreException.class, () -> {
            LocalStore r = store();
            r.events("c");
        });
        assertEquals(LocalStoreException.Problem.DAMAGED, e.problem(), e.getMessage());
    }

    @Test
    void aStoreOfANewerSchemaIsRefusedAndLeftAsItIs() throws Exception {
        store().applyPushes(List.of(ev("c", 1)));
        open.close();
        open = null;
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement()) {
            st.execute("PRAGMA user_version = " + (LocalStore.SCHEMA_VERSION + 1));
        }
        LocalStoreException e = assertThrows(LocalStoreException.class, () -> LocalStore.open(dir));
        assertEquals(LocalStoreException.Problem.NEWER_SCHEMA, e.problem());
        assertTrue(e.getMessage().contains("newer SDK"), e.getMessage());
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("SELECT count(*) FROM events")) {
            rs.next();
            assertEquals(1, rs.getInt(1), "nothing dropped");
        }
    }

    @Test
    void aStoreOfSchemaOneOpensKeepingItsLocalReadMarkUntilTheServersReadStateReplacesIt() throws Exception {
        store().applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 3), ev("c", 4), ev("c", 5)));
        open.close();
        open = null;
        // Back to schema 1, as an earlier SDK left it: a local read mark at 3, 4 and 5 unread.
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement()) {
            st.execute("UPDATE convs SET read_seq = 3, unread = 2");
            asSchemaOne(st);
        }
        LocalStore s = store();
        assertEquals(new ReadStatus("c", 3, 2), s.readStatus("c"), "the local mark and its count, kept");
        s.applyPushes(List.of(ev("c", 6)));
        assertEquals(new ReadStatus("c", 3, 3), s.readStatus("c"), "counted above the mark as before");
        assertTrue(s.applyReadState("c", new ReadState(1, 4, 5)), "the server's cursor is the truth, even below the mark");
        assertEquals(new ReadStatus("c", 1, 5), s.readStatus("c"), "4 at head 5, and 6");
        assertFalse(s.applyReadState("c", new ReadState(0, 5, 5)), "now a lower cursor is ignored");
        open.close();
        open = null;
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(LocalStore.FILE_NAME));
             Statement st = c.createStatement();
             var rs = st.executeQuery("PRAGMA user_version")) {
            rs.next();
            assertEquals(LocalStore.SCHEMA_VERSION, rs.getInt(1));
        }
        assertEquals(new ReadStatus("c", 1, 5), store().readStatus("c"), "after a reopen");
    }

    @Test
    void theLatestReadStateWinsWhateverOrderTheyArriveIn() throws IOException {
        LocalStore s = store();
        s.selfUser("u-bo");
        assertTrue(s.applyReadState("c", new ReadState(2, 1, 3)), "a state before any event of the conversation");
        assertEquals(new ReadStatus("c", 2, 1), s.readStatus("c"));
        s.applyPushes(List.of(ev("c", 4), new Event("c", 5, Event.MSG, "m-5", "u-bo", "cm-5", "mine", 5),
                new Event("c", 6, Event.JOIN, "m-6", "u-cy", null, null, 6)));
        s.applyPushes(List.of(ev("c", 4)));
        assertEquals(new ReadStatus("c", 2, 2), s.readStatus("c"), "4 counts once; the own message and the join never");
        assertTrue(s.applyReadState("c", new ReadState(2, 1, 4)), "the same cursor at a higher head");
        assertEquals(new ReadStatus("c", 2, 1), s.readStatus("c"), "4 is in the state's count now, not twice");
        assertFalse(s.applyReadState("c", new ReadState(2, 0, 3)), "the same cursor at a lower head");
        assertFalse(s.applyReadState("c", new ReadState(1, 0, 6)), "a lower cursor");
        assertTrue(s.applyReadState("c", new ReadState(6, 0, 6)));
        assertEquals(new ReadStatus("c", 6, 0), s.readStatus("c"));
        assertEquals(0, s.unreadTotal());
    }

    @Test
    void openCreatesAMissingStateDirectory() throws IOException {
        Path nested = dir.resolve("a").resolve("b");
        LocalStore s = store(nested);
        assertEquals(Map.of(), s.cursors());
        assertTrue(Files.exists(nested.resolve(LocalStore.FILE_NAME)));
    }
}
