package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ReceivedEvent;
import im.protocol.Event;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DurableEventStoreTest {
    @TempDir
    Path dir;

    static Event ev(String conv, long seq) {
        return new Event(conv, seq, Event.MSG, "m-" + seq, "u-ana", "cm-" + seq, "body " + seq, 1_700_000_000_000L + seq);
    }

    private static List<Long> seqs(DurableEventStore s, String conv) {
        return s.events(conv).stream().map(ReceivedEvent::seq).toList();
    }

    @Test
    void holdingFiveAndSevenWithoutSixKeepsTheCursorAtFiveUntilSixArrives() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 3), ev("c", 4), ev("c", 5)));
        assertEquals(5, s.cursor("c"));
        DurableEventStore.Result r = s.applyPushes(List.of(ev("c", 7)));
        assertEquals(5, s.cursor("c"), "7 without 6 keeps the cursor");
        assertEquals(Map.of(), r.advanced());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 7L), seqs(s, "c"), "7 is stored anyway");
        r = s.applyPushes(List.of(ev("c", 6)));
        assertEquals(7, s.cursor("c"), "6 fills the gap");
        assertEquals(Map.of("c", 7L), r.advanced());
    }

    @Test
    void duplicatesAreAppliedOnce() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        assertEquals(2, s.applyPushes(List.of(ev("c", 1), ev("c", 2), ev("c", 1))).added().size());
        long size = Files.size(dir.resolve(DurableEventStore.LOG_FILE));
        DurableEventStore.Result r = s.applyPushes(List.of(ev("c", 2), ev("c", 1)));
        assertTrue(r.added().isEmpty());
        assertEquals(size, Files.size(dir.resolve(DurableEventStore.LOG_FILE)), "nothing written for duplicates");
        s.applyPage("c", 0, List.of(ev("c", 1), ev("c", 2)), false, 2);
        assertEquals(List.of(1L, 2L), seqs(s, "c"));
        assertEquals(2, s.cursor("c"));
    }

    @Test
    void outOfOrderFillAdvancesOverEverythingHeld() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 4)));
        s.applyPushes(List.of(ev("c", 2), ev("c", 3)));
        assertEquals(0, s.cursor("c"));
        s.applyPushes(List.of(ev("c", 1)));
        assertEquals(4, s.cursor("c"));
        assertEquals(List.of(1L, 2L, 3L, 4L), seqs(s, "c"));
    }

    @Test
    void pageWithoutMoreAdvancesToHeadOverInvisibleSeqs() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        // visible: 3 (join) .. 5; then 9; head 10 (6..8 and 10 invisible to this user)
        s.applyPage("c", 0, List.of(ev("c", 3), ev("c", 4), ev("c", 5), ev("c", 9)), false, 10);
        assertEquals(10, s.cursor("c"));
    }

    @Test
    void pageWithMoreAdvancesToItsLastSeqOnly() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPage("c", 0, List.of(ev("c", 3), ev("c", 5)), true, 20);
        assertEquals(5, s.cursor("c"));
        s.applyPage("c", 5, List.of(ev("c", 8)), false, 12);
        assertEquals(12, s.cursor("c"));
    }

    @Test
    void pageWhoseAfterIsAboveTheCursorDoesNotAdvanceIt() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        s.applyPage("c", 4, List.of(ev("c", 5), ev("c", 6)), false, 9);
        assertEquals(2, s.cursor("c"), "(2,4] is not covered");
        assertEquals(List.of(1L, 2L, 5L, 6L), seqs(s, "c"));
        s.applyPage("c", 2, List.of(ev("c", 3), ev("c", 4)), true, 9);
        assertEquals(6, s.cursor("c"), "the page closes (2,4], and 5, 6 are held");
    }

    @Test
    void pageAdjacentToAPushedPrefixKeepsHeldEventsAbove() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1), ev("c", 9)));
        s.applyPage("c", 1, List.of(ev("c", 4)), false, 8); // an older snapshot: head 8
        assertEquals(9, s.cursor("c"), "up to head 8 then the held 9");
    }

    @Test
    void survivesReopen() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("a", 1), ev("a", 2), ev("a", 4), ev("b", 1)));
        s.applyPage("b", 1, List.of(), false, 3);
        Event join = new Event("a", 5, Event.JOIN, "m-j", "u-bo", null, null, 5);
        s.applyPushes(List.of(join));
        DurableEventStore r = DurableEventStore.open(dir);
        assertEquals(Map.of("a", 2L, "b", 3L), r.cursors());
        assertEquals(s.events("a"), r.events("a"));
        assertEquals(List.of(1L, 2L, 4L, 5L), seqs(r, "a"));
        assertEquals(ReceivedEvent.of(join), r.events("a").get(3));
        r.applyPushes(List.of(ev("a", 3)));
        assertEquals(5, DurableEventStore.open(dir).cursor("a"));
    }

    @Test
    void uncommittedTailOfTheLogIsCutOffAtOpen() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1)));
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        long committed = Files.size(log);
        Files.write(log, "{\"conv\":\"c\",\"seq\":2,\"ki".getBytes(StandardCharsets.UTF_8), StandardOpenOption.APPEND);
        DurableEventStore r = DurableEventStore.open(dir);
        assertEquals(List.of(1L), seqs(r, "c"));
        assertEquals(committed, Files.size(log));
        r.applyPushes(List.of(ev("c", 2)));
        assertEquals(2, DurableEventStore.open(dir).cursor("c"));
    }

    @Test
    void truncatedLogFailsAtOpenNamingTheFile() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        DurableEventStore.open(dir); // the checkpoint now covers both events
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
            ch.truncate(Files.size(log) - 10);
        }
        IOException e = assertThrows(IOException.class, () -> DurableEventStore.open(dir));
        assertTrue(e.getMessage().contains(log.toAbsolutePath().toString()), e.getMessage());
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void corruptRecordFailsAtOpenNamingTheFileAndLine() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        byte[] b = Files.readAllBytes(log);
        String text = new String(b, StandardCharsets.UTF_8);
        int second = text.indexOf('\n') + 1;
        b[second] = 'X'; // same length, damaged
        Files.write(log, b);
        IOException e = assertThrows(IOException.class, () -> DurableEventStore.open(dir));
        assertTrue(e.getMessage().contains(log.toAbsolutePath().toString()), e.getMessage());
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }

    @Test
    void truncatedStateFailsAtOpenNamingTheFile() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1)));
        Path state = dir.resolve(DurableEventStore.STATE_FILE);
        byte[] b = Files.readAllBytes(state);
        Files.write(state, java.util.Arrays.copyOf(b, b.length / 2));
        IOException e = assertThrows(IOException.class, () -> DurableEventStore.open(dir));
        assertTrue(e.getMessage().contains(state.toAbsolutePath().toString()), e.getMessage());
    }

    @Test
    void oneBatchIsOneAppendWithItsCommitRecordAndNoStateFileWrite() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        Path state = dir.resolve(DurableEventStore.STATE_FILE);
        byte[] checkpoint = Files.readAllBytes(state);
        s.applyPushes(List.of(ev("c", 1), ev("c", 2)));
        s.applyPage("c", 2, List.of(), false, 4);
        assertArrayEquals(checkpoint, Files.readAllBytes(state));
        List<String> lines = Files.readAllLines(dir.resolve(DurableEventStore.LOG_FILE));
        assertEquals(4, lines.size(), lines.toString());
        assertTrue(lines.get(2).startsWith("{\"commit\":"), lines.get(2));
        assertTrue(lines.get(2).endsWith("\"cursors\":{\"c\":2}}"), lines.get(2));
        assertTrue(lines.get(3).endsWith("\"cursors\":{\"c\":4}}"), lines.get(3));
        assertEquals(4, DurableEventStore.open(dir).cursor("c"));
    }

    /** Damage done to the log after its second batch was committed. */
    private interface Damage {
        void to(Path log) throws IOException;
    }

    /** Commits c:1, then c:2..3, damages the log, and expects the second batch gone at open. */
    private void secondBatchIsCutOffAfter(Damage damage) throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1)));
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        long committed = Files.size(log);
        s.applyPushes(List.of(ev("c", 2), ev("c", 3)));
        damage.to(log);
        DurableEventStore r = DurableEventStore.open(dir);
        assertEquals(List.of(1L), seqs(r, "c"));
        assertEquals(1, r.cursor("c"));
        assertEquals(committed, Files.size(log));
    }

    @Test
    void lastBatchWithoutItsWholeCommitRecordIsCutOffAndItsCursorIsNotKept() throws IOException {
        secondBatchIsCutOffAfter(log -> {
            try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
                ch.truncate(Files.size(log) - 5); // a crash mid-write: the commit record is incomplete
            }
        });
    }

    @Test
    void lastBatchWhoseEventsDoNotMatchItsCommitRecordIsCutOff() throws IOException {
        // Still valid JSON, but not what the commit record's CRC covers (pages written out of order).
        secondBatchIsCutOffAfter(log -> Files.writeString(log, Files.readString(log).replace("body 2", "Body 2")));
    }

    @Test
    void damagedBatchFollowedByACommittedOneFailsAtOpen() throws IOException {
        DurableEventStore s = DurableEventStore.open(dir);
        s.applyPushes(List.of(ev("c", 1)));
        s.applyPushes(List.of(ev("c", 2)));
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        byte[] b = Files.readAllBytes(log);
        int body = new String(b, StandardCharsets.UTF_8).indexOf("body 1");
        b[body] = 'B';
        Files.write(log, b);
        IOException e = assertThrows(IOException.class, () -> DurableEventStore.open(dir));
        assertTrue(e.getMessage().contains(log.toAbsolutePath().toString()), e.getMessage());
        assertTrue(e.getMessage().contains("line 4"), e.getMessage());
    }

    @Test
    void formatOneDirectoryOpensAndIsCheckpointedSoAnOldSdkRefusesIt() throws IOException {
        Path log = dir.resolve(DurableEventStore.LOG_FILE);
        String e1 = new String(EventStoreFiles.encode(ReceivedEvent.of(ev("c", 1))), StandardCharsets.UTF_8) + "\n";
        String uncommitted = new String(EventStoreFiles.encode(ReceivedEvent.of(ev("c", 2))), StandardCharsets.UTF_8) + "\n";
        Files.writeString(log, e1 + uncommitted);
        Files.writeString(dir.resolve(DurableEventStore.STATE_FILE),
                "{\"version\":1,\"logBytes\":" + e1.getBytes(StandardCharsets.UTF_8).length + ",\"cursors\":{\"c\":1}}");
        DurableEventStore r = DurableEventStore.open(dir);
        assertEquals(List.of(1L), seqs(r, "c"));
        assertEquals(1, r.cursor("c"));
        assertEquals(e1, Files.readString(log));
        assertTrue(Files.readString(dir.resolve(DurableEventStore.STATE_FILE)).startsWith("{\"version\":2,"));
        r.applyPushes(List.of(ev("c", 2)));
        assertEquals(2, DurableEventStore.open(dir).cursor("c"));
    }
}
