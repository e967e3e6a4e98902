package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.PendingSend;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DurableOutboxTest {
    @TempDir
    Path dir;

    private static PendingSend entry(String cmid) {
        return new PendingSend(cmid, "c-ab", "body of " + cmid + " \u00e9\ud83d\ude00 \"quoted\"", 1_700_000_000_000L);
    }

    private List<String> filesInDir() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    @Test
    void entriesSurviveReopenInInsertionOrder() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        List<PendingSend> added = List.of(entry("m-3"), entry("m-1"), entry("m-2"));
        for (PendingSend e : added) {
            outbox.add(e);
        }

        DurableOutbox reopened = DurableOutbox.open(dir);

        assertEquals(added, reopened.snapshot());
    }

    @Test
    void internalErrorCountsSurviveReopenAndOldFilesReadAsZero() throws IOException {
        Files.writeString(dir.resolve(DurableOutbox.FILE_NAME), "{\"version\":1,\"entries\":[{\"cmid\":\"m-old\","
                + "\"conv\":\"c-ab\",\"body\":\"x\",\"createdAtMillis\":1}]}");
        DurableOutbox outbox = DurableOutbox.open(dir);
        assertEquals(0, outbox.get("m-old").internalErrors(), "a file from before the count existed");
        outbox.recordInternalError("m-old");
        assertEquals(2, outbox.recordInternalError("m-old").internalErrors());
        assertEquals(null, outbox.recordInternalError("m-none"));

        assertEquals(2, DurableOutbox.open(dir).get("m-old").internalErrors());
    }

    @Test
    void removalSurvivesReopen() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        outbox.add(entry("m-1"));
        outbox.add(entry("m-2"));
        outbox.add(entry("m-3"));

        assertTrue(outbox.remove("m-2"));
        assertFalse(outbox.remove("m-2"), "second removal finds nothing");

        assertEquals(List.of(entry("m-1"), entry("m-3")), DurableOutbox.open(dir).snapshot());
    }

    @Test
    void openCreatesMissingStateDirectoryAndStartsEmpty() throws IOException {
        Path nested = dir.resolve("a").resolve("b");

        DurableOutbox outbox = DurableOutbox.open(nested);

        assertTrue(Files.isDirectory(nested));
        assertTrue(outbox.snapshot().isEmpty());
    }

    @Test
    void truncatedFileFailsOpenWithMessageNamingTheFile() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        outbox.add(entry("m-1"));
        outbox.add(entry("m-2"));
        Path file = dir.resolve(DurableOutbox.FILE_NAME);
        byte[] full = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(full, full.length / 2));

        IOException e = assertThrows(IOException.class, () -> DurableOutbox.open(dir));

        assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
    }

    @Test
    void emptyOrWrongShapedFileFailsOpenInsteadOfDroppingEntries() throws IOException {
        Path file = dir.resolve(DurableOutbox.FILE_NAME);
        for (String content : List.of("", "[]", "{\"version\":1}",
                "{\"version\":1,\"entries\":[{\"cmid\":\"m-1\",\"conv\":\"c\",\"body\":\"b\"}]}")) {
            Files.writeString(file, content, StandardCharsets.UTF_8);

            IOException e = assertThrows(IOException.class, () -> DurableOutbox.open(dir), content);

            assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
        }
    }

    @Test
    void concurrentAddsFromEightThreadsAllSurviveInEachThreadsOrder() throws Exception {
        DurableOutbox outbox = DurableOutbox.open(dir);
        int threads = 8;
        int perThread = 25;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            futures.add(pool.submit(() -> {
                start.await();
                for (int i = 0; i < perThread; i++) {
                    outbox.add(entry("t" + id + "-" + i));
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();

        List<PendingSend> reloaded = DurableOutbox.open(dir).snapshot();

        assertEquals(threads * perThread, reloaded.size());
        assertEquals(outbox.snapshot(), reloaded);
        for (int t = 0; t < threads; t++) {
            String prefix = "t" + t + "-";
            List<String> own = reloaded.stream().map(PendingSend::cmid).filter(c -> c.startsWith(prefix))
                    .collect(Collectors.toList());
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < perThread; i++) {
                expected.add(prefix + i);
            }
            assertEquals(expected, own);
        }
    }

    @Test
    void tempFileNeverRemainsAfterSuccessfulWrites() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        outbox.add(entry("m-1"));
        assertEquals(List.of(DurableOutbox.FILE_NAME), filesInDir());
        outbox.add(entry("m-2"));
        outbox.remove("m-1");
        outbox.remove("m-2");

        assertEquals(List.of(DurableOutbox.FILE_NAME), filesInDir());
        assertTrue(DurableOutbox.open(dir).snapshot().isEmpty());
    }

    @Test
    void staleTempFileFromAnInterruptedWriteIsDeletedAtOpenAndIgnored() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        outbox.add(entry("m-1"));
        Files.writeString(dir.resolve(DurableOutbox.FILE_NAME + ".123456.tmp"), "{\"version\":1,\"entr");

        DurableOutbox reopened = DurableOutbox.open(dir);

        assertEquals(List.of(entry("m-1")), reopened.snapshot());
        assertEquals(List.of(DurableOutbox.FILE_NAME), filesInDir());
    }

    @Test
    void addingADuplicateCmidIsRejected() throws IOException {
        DurableOutbox outbox = DurableOutbox.open(dir);
        outbox.add(entry("m-1"));

        assertThrows(IllegalArgumentException.class, () -> outbox.add(entry("m-1")));
        assertEquals(1, DurableOutbox.open(dir).snapshot().size());
    }
}
