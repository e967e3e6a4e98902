package im.bench;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.client.api.ConversationSummary;
import im.client.api.ReceivedEvent;
import im.client.internal.LocalStore;
import im.protocol.Event;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The Java SDK's local store (SQLite), three modes:
 * <ul>
 *   <li>{@code receive [n]} (default 2000): thread CPU (user, system; SQLite runs in the calling
 *       thread), the whole machine's busy CPU, allocation and retained heap per 1,000 one-event
 *       batches, each committed before it could be acked (D3), three rounds in a fresh temp
 *       directory each;</li>
 *   <li>{@code fill DIR [events] [convs]} (default 1,000,000 and 1,000): a store of that size, one
 *       batch per conversation, 200-byte bodies;</li>
 *   <li>{@code open DIR}: in a fresh JVM, the time of {@link ImClient#open} on it and the heap it
 *       holds after a full GC, then the first page of the conversation list (50 rows), a page of 50
 *       events of one conversation and a text search.</li>
 * </ul>
 * Run with {@code java -cp "bench/target/classes:$(cat bench/target/cp.txt)"} after
 * {@code bench/run-delivery-bench.sh --help} built the class path (see docs/benchmarks.md).
 */
public final class ClientStoreBench {
    private ClientStoreBench() {
    }

    /** 200 characters; a word {@code w<seq % 997>} for the search. */
    static String body(String conv, long seq) {
        String s = "message " + seq + " in " + conv + " about w" + (seq % 997) + " ";
        return (s + "x".repeat(200)).substring(0, 200);
    }

    static long usedAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "receive";
        switch (mode) {
            case "receive" -> receive(args.length > 1 ? Integer.parseInt(args[1]) : 2000);
            case "fill" -> fill(Path.of(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 1_000_000,
                    args.length > 3 ? Integer.parseInt(args[3]) : 1000);
            case "open" -> open(Path.of(args[1]));
            default -> throw new IllegalArgumentException("mode: receive [n] | fill DIR [events] [convs] | open DIR");
        }
    }

    private static void receive(int n) throws Exception {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int round = 0; round < 3; round++) {
            Path dir = Files.createTempDirectory("client-store-bench");
            try (LocalStore s = LocalStore.open(dir)) {
                long h0 = usedAfterGc();
                long a0 = mx.getCurrentThreadAllocatedBytes();
                long c0 = mx.getCurrentThreadCpuTime();
                long u0 = mx.getCurrentThreadUserTime();
                long w0 = System.nanoTime();
                long m0 = SendBench.CpuSample.now().busy();   // ticks of 1/100 s, all cores
                for (int i = 1; i <= n; i++) {
                    s.applyPushes(List.of(new Event("c-g", i, Event.MSG, "m-" + i, "u-ana", "cm-" + i, body("c-g", i),
                            1_700_000_000_000L + i)));
                }
                double machine = (SendBench.CpuSample.now().busy() - m0) * 10.0 * 1000 / n;
                double cpu = (mx.getCurrentThreadCpuTime() - c0) / 1e6 * 1000 / n;
                double user = (mx.getCurrentThreadUserTime() - u0) / 1e6 * 1000 / n;
                double wall = (System.nanoTime() - w0) / 1e6 * 1000 / n;
                double alloc = (mx.getCurrentThreadAllocatedBytes() - a0) / 1e6 * 1000 / n;
                double retained = (usedAfterGc() - h0) / 1e6 * 1000 / n;
                System.out.printf("round %d: %d one-event batches, per 1,000: CPU %.0f ms (user %.0f, system %.0f), machine %.0f ms,"
                        + " wall %.0f ms, allocated %.1f MB, retained heap %.2f MB%n", round, n, cpu, user, cpu - user, machine, wall,
                        alloc, retained);
            }
            deleteTree(dir);
        }
    }

    private static void fill(Path dir, int events, int convs) throws Exception {
        int per = events / convs;
        long w0 = System.nanoTime();
        try (LocalStore s = LocalStore.open(dir)) {
            s.selfUser("u-ana");
            for (int c = 0; c < convs; c++) {
                String conv = String.format("c-%04d", c);
                List<Event> batch = new ArrayList<>(per);
                for (int i = 1; i <= per; i++) {
                    batch.add(new Event(conv, i, Event.MSG, "m-" + c + "-" + i, i % 2 == 0 ? "u-ana" : "u-bob",
                            "cm-" + c + "-" + i, body(conv, i), 1_700_000_000_000L + (long) c * per + i));
                }
                s.applyPushes(batch);
            }
        }
        System.out.printf("filled %s: %d events in %d conversations in %.1f s%n", dir, events, convs, (System.nanoTime() - w0) / 1e9);
    }

    private static void open(Path dir) throws Exception {
        // The first store a process opens also loads SQLite's native library (extracted from the jar):
        // timed apart, on an empty store, so the figure below is the store's own.
        Path empty = Files.createTempDirectory("client-store-bench-empty");
        long l0 = System.nanoTime();
        ImClient.open(ClientOptions.of(URI.create("ws://127.0.0.1:9/ws"), "t-bench", empty)).close();
        double firstOpen = (System.nanoTime() - l0) / 1e6;
        deleteTree(empty);
        long h0 = usedAfterGc();
        long w0 = System.nanoTime();
        try (ImClient c = ImClient.open(ClientOptions.of(URI.create("ws://127.0.0.1:9/ws"), "t-bench", dir))) {
            double open = (System.nanoTime() - w0) / 1e6;
            long heap = usedAfterGc() - h0;
            long w1 = System.nanoTime();
            List<ConversationSummary> list = c.conversations(null, 50);
            double listMs = (System.nanoTime() - w1) / 1e6;
            long w1b = System.nanoTime();
            int all = 0;
            for (List<ConversationSummary> p = c.conversations(null, 1000); !p.isEmpty(); p = c.conversations(p.get(p.size() - 1), 1000)) {
                all += p.size();
            }
            double listAllMs = (System.nanoTime() - w1b) / 1e6;
            long w2 = System.nanoTime();
            List<ReceivedEvent> page = c.eventsBefore("c-0500", 500, 50);
            double pageMs = (System.nanoTime() - w2) / 1e6;
            long w3 = System.nanoTime();
            List<ReceivedEvent> hits = c.search("w123", null, null, 50);
            double searchMs = (System.nanoTime() - w3) / 1e6;
            System.out.printf("first client of the process (empty store, loads SQLite) %.0f ms; ", firstOpen);
            System.out.printf("open %.0f ms, heap held after open %.1f MB, first %d of the conversation list %.1f ms"
                            + " (all %d in pages of 1,000: %.1f ms), page of %d events %.2f ms, search (%d hits) %.1f ms%n",
                    open, heap / 1e6, list.size(), listMs, all, listAllMs, page.size(), pageMs, hits.size(), searchMs);
            System.out.printf("heap in use by the whole process after the queries and a full GC: %.1f MB (max heap %d MB)%n",
                    usedAfterGc() / 1e6, Runtime.getRuntime().maxMemory() >> 20);
        }
    }

    private static void deleteTree(Path dir) throws Exception {
        try (var files = Files.walk(dir)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(f);
            }
        }
    }
}
