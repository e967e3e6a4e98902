package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Many devices sending into one conversation at once over WebSocket: seqs are gap-free and unique. */
@ExtendWith(ImStackExtension.class)
class ConcurrentSendersIT {
    @Test
    void concurrentSendersInOneConversationGetContiguousSeqs(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        int devices = 6;
        int each = 30;
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < devices; i++) {
            tokens.add(fx.dir.registerDevice(i % 2 == 0 ? "u-ana" : "u-bo", "d-extra-" + i).token());
        }
        long head0 = fx.head("c-ab");
        ExecutorService pool = Executors.newFixedThreadPool(devices);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<List<Long>>> results = new ArrayList<>();
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            for (int i = 0; i < devices; i++) {
                ImClient c = ImClient.open(ClientOptions.of(gw.ws(), tokens.get(i), dir.resolve("dev" + i)));
                c.connect();
                results.add(pool.submit(() -> {
                    try (c) {
                        go.await();
                        List<Long> seqs = new ArrayList<>();
                        for (int k = 0; k < each; k++) seqs.add(c.send("c-ab", "message " + k).seq());
                        return seqs;
                    }
                }));
            }
            go.countDown();
            TreeSet<Long> all = new TreeSet<>();
            int n = 0;
            for (Future<List<Long>> f : results) {
                for (long s : f.get()) {
                    all.add(s);
                    n++;
                }
            }
            assertEquals(devices * each, n);
            assertEquals(devices * each, all.size(), "no duplicate seq");
            assertEquals(head0 + 1, all.first());
            assertEquals(head0 + devices * each, all.last(), "no gap");
        } finally {
            pool.shutdownNow();
        }
        assertEquals(devices * each, fx.messages());
    }
}
