package im.bench;

import im.client.internal.DurableEventStore;
import im.protocol.Event;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * CPU of the SDK's durable event store per one-event batch (what each recipient of the delivery
 * bench commits at 4 events/s): thread CPU (user and system) of {@code n} commits of one 200-byte
 * event each, three rounds, in a fresh temp directory per round. Independent of the machine's load
 * in a way the whole delivery bench is not. Usage: {@code ClientStoreBench [n]} (default 2000);
 * run with {@code java -cp "bench/target/classes:$(cat bench/target/cp.txt)"} after the delivery
 * bench's build (see docs/benchmarks.md).
 */
public final class ClientStoreBench {
    private ClientStoreBench() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        String body = "x".repeat(200);
        for (int round = 0; round < 3; round++) {
            Path dir = Files.createTempDirectory("client-store-bench");
            DurableEventStore s = DurableEventStore.open(dir);
            long c0 = mx.getCurrentThreadCpuTime();
            long u0 = mx.getCurrentThreadUserTime();
            long w0 = System.nanoTime();
            for (int i = 1; i <= n; i++) {
                s.applyPushes(List.of(new Event("c-g", i, Event.MSG, "m-" + i, "u-ana", "cm-" + i, body, 1_700_000_000_000L + i)));
            }
            double cpu = (mx.getCurrentThreadCpuTime() - c0) / 1e6 * 1000 / n;
            double user = (mx.getCurrentThreadUserTime() - u0) / 1e6 * 1000 / n;
            System.out.printf("round %d: %d one-event batches: CPU %.0f ms per 1,000 (user %.0f, system %.0f), wall %.0f ms per 1,000%n",
                    round, n, cpu, user, cpu - user, (System.nanoTime() - w0) / 1e6 * 1000 / n);
            s.close();
            try (var files = Files.walk(dir)) {
                for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(f);
            }
        }
    }
}
