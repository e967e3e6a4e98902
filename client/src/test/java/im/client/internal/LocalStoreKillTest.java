package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ReceivedEvent;
import im.protocol.Event;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * D3 across a real kill -9: a child JVM stores one-event batches and prints "stored N" after each
 * commit returned (the moment the SDK may ack N); it is killed with SIGKILL mid-stream, and the
 * store reopened in this JVM must hold every printed batch, with a cursor at least the last one
 * printed and a contiguous history below it.
 */
class LocalStoreKillTest {
    @TempDir
    Path dir;

    /** The child: stores batches until killed. */
    public static void main(String[] args) throws Exception {
        try (LocalStore s = LocalStore.open(Path.of(args[0]))) {
            for (long seq = 1; ; seq++) {
                s.applyPushes(List.of(new Event("c", seq, Event.MSG, "m-" + seq, "u-ana", null, "body " + seq, seq)));
                System.out.println("stored " + seq);
                System.out.flush();
            }
        }
    }

    @Test
    void everyBatchThatReturnedBeforeAKill9IsThereAfterwards() throws Exception {
        for (int round = 0; round < 3; round++) {
            Path d = dir.resolve("r" + round);
            String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process p = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"),
                    LocalStoreKillTest.class.getName(), d.toString()).redirectErrorStream(true).start();
            long lastStored = 0;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                long target = 50 + 37L * round; // kill at a different point each round
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    if (line.startsWith("stored ")) {
                        lastStored = Long.parseLong(line.substring(7));
                        if (lastStored >= target) {
                            p.destroyForcibly(); // SIGKILL: no close, no checkpoint, maybe mid-commit
                            break;
                        }
                    }
                }
            }
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertTrue(lastStored > 0, "the child stored batches");
            try (LocalStore r = LocalStore.open(d)) {
                long cursor = r.cursor("c");
                assertTrue(cursor >= lastStored, "round " + round + ": reported stored up to " + lastStored + ", cursor " + cursor);
                List<Long> seqs = r.events("c").stream().map(ReceivedEvent::seq).toList();
                assertEquals(java.util.stream.LongStream.rangeClosed(1, cursor).boxed().toList(), seqs,
                        "contiguous, nothing beyond the cursor from a torn batch");
            }
        }
    }
}
