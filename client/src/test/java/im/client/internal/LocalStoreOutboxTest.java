package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.PendingSend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The outbox in the SQLite store, and the one-time import of an outbox.json of the SDK before it; real files. */
class LocalStoreOutboxTest {
    @TempDir
    Path dir;

    private static PendingSend entry(String cmid) {
        return new PendingSend(cmid, "c-ab", "body of " + cmid + " \u00e9\ud83d\ude00 \"quoted\"", 1_700_000_000_000L);
    }

    @Test
    void entriesSurviveReopenInInsertionOrder() throws IOException {
        List<PendingSend> added = List.of(entry("m-3"), entry("m-1"), entry("m-2"));
        try (LocalStore s = LocalStore.open(dir)) {
            for (PendingSend e : added) {
                s.outboxAdd(e);
            }
        }
        try (LocalStore s = LocalStore.open(dir)) {
            assertEquals(added, s.outbox());
        }
    }

    @Test
    void anAddThatReturnedSurvivesAKilledProcess() throws IOException {
        Path killed = dir.resolveSibling(dir.getFileName() + "-killed");
        try (LocalStore s = LocalStore.open(dir)) {
            s.outboxAdd(entry("m-1"));
            s.outboxAdd(entry("m-2"));
            s.outboxRemove("m-1");
            Files.createDirectories(killed);
            for (String f : List.of(LocalStore.FILE_NAME, LocalStore.FILE_NAME + "-wal")) {
                Files.copy(dir.resolve(f), killed.resolve(f)); // the files as they are while the process runs
            }
        }
        try (LocalStore s = LocalStore.open(killed)) {
            assertEquals(List.of(entry("m-2")), s.outbox());
        }
    }

    @Test
    void internalErrorCountsAndRemovalsSurviveReopen() throws IOException {
        try (LocalStore s = LocalStore.open(dir)) {
            s.outboxAdd(entry("m-1"));
            s.outboxAdd(entry("m-2"));
            s.outboxRecordInternalError("m-1");
            assertEquals(2, s.outboxRecordInternalError("m-1").internalErrors());
            assertNull(s.outboxRecordInternalError("m-none"));
            assertTrue(s.outboxRemove("m-2"));
            assertFalse(s.outboxRemove("m-2"), "already gone");
        }
        try (LocalStore s = LocalStore.open(dir)) {
            assertEquals(List.of(new PendingSend("m-1", "c-ab", entry("m-1").body(), 1_700_000_000_000L, 2)), s.outbox());
        }
    }

    @Test
    void addingADuplicateCmidIsRejected() throws IOException {
        try (LocalStore s = LocalStore.open(dir)) {
            s.outboxAdd(entry("m-1"));
            assertThrows(IllegalArgumentException.class, () -> s.outboxAdd(entry("m-1")));
            assertEquals(1, s.outbox().size());
        }
    }

    @Test
    void concurrentAddsFromEightThreadsAllSurviveInEachThreadsOrder() throws Exception {
        int threads = 8;
        int perThread = 25;
        List<PendingSend> inMemory;
        try (LocalStore s = LocalStore.open(dir)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        s.outboxAdd(entry("t" + id + "-" + i));
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
            pool.shutdown();
            inMemory = s.outbox();
        }
        List<PendingSend> reloaded;
        try (LocalStore s = LocalStore.open(dir)) {
            reloaded = s.outbox();
        }
        assertEquals(threads * perThread, reloaded.size());
        assertEquals(inMemory, reloaded);
        for (int t = 0; t < threads; t++) {
            String prefix = "t" + t + "-";
            List<String> own = reloaded.stream().map(PendingSend::cmid).filter(c -> c.startsWith(prefix)).toList();
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < perThread; i++) {
                expected.add(prefix + i);
            }
            assertEquals(expected, own);
        }
    }

    @Test
    void anOutboxJsonOfTheEarlierSdkIsImportedOnceWithItsCountsAndOldEventFilesAreSetAside() throws IOException {
        Files.writeString(dir.resolve("outbox.json"), "{\"version\":1,\"entries\":["
                + "{\"cmid\":\"m-old\",\"conv\":\"c-ab\",\"body\":\"x\",\"createdAtMillis\":1},"
                + "{\"cmid\":\"m-two\",\"conv\":\"c-ab\",\"body\":\"y\",\"createdAtMillis\":2,\"internalErrors\":3}]}");
        Files.writeString(dir.resolve("events.log"), "{\"conv\":\"c-ab\"}\n");
        try (LocalStore s = LocalStore.open(dir)) {
            LegacyState.importInto(dir, s);
            assertEquals(List.of(new PendingSend("m-old", "c-ab", "x", 1, 0), new PendingSend("m-two", "c-ab", "y", 2, 3)),
                    s.outbox(), "a file from before the count existed reads as 0");
        }
        assertFalse(Files.exists(dir.resolve("outbox.json")));
        assertTrue(Files.exists(dir.resolve("outbox.json.imported")));
        assertTrue(Files.exists(dir.resolve("events.log.replaced")), "set aside, not deleted");
        try (LocalStore s = LocalStore.open(dir)) {
            LegacyState.importInto(dir, s);
            assertEquals(2, s.outbox().size(), "imported once");
        }
    }

    @Test
    void aDamagedOutboxJsonFailsOpenNamingTheFileAndIsNotImportedOrMoved() throws IOException {
        Path file = dir.resolve("outbox.json");
        Files.writeString(file, "{\"version\":1,\"entries\":[{\"cmid\":");
        try (LocalStore s = LocalStore.open(dir)) {
            IOException e = assertThrows(IOException.class, () -> LegacyState.importInto(dir, s));
            assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
            assertEquals(List.of(), s.outbox());
        }
        assertTrue(Files.exists(file));
    }
}
