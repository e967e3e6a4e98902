package im.store.cursor;

import im.infra.identity.DevicePrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit for acks: concurrent acks (from many devices) are collected for at most
 * {@code maxDelay} after the first one arrives, or until {@code maxBatch} are waiting, and
 * written by {@link CursorService#ackBatch} in one transaction. Acks of the same device and
 * conversation collapse into one row write. Under light load a batch is a single ack and the
 * extra delay is the collection window only.
 *
 * <p><b>Per-pair throttle</b> ({@code throttle > 0}): one (device, conversation) is let through to
 * a write at most once per {@code throttle}. The first ack after a quiet spell goes at once (so
 * latency at low load is unchanged); an ack arriving sooner waits until the interval since the
 * pair's last write has passed, and every ack of the pair arriving meanwhile waits with it and is
 * written in the same row write. A device acking a busy conversation (the SDK keeps one ack in
 * flight per conversation) therefore costs one row, one WAL record and one cursor record per
 * interval instead of one per push; each ack is still answered only once its cursor is written.
 */
public final class CursorWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CursorWriter.class);

    // An ack can reach us before the send it acknowledges is visible to a new snapshot; the
    // service's check waits for such a send (CursorService.RECHECK), so nothing is retried here.
    private record Pending(AckRequest ack, CompletableFuture<Long> reply) {}

    private final CursorService service;
    private final Duration maxDelay;
    private final int maxBatch;
    /**
     * Units of acks that go into one batch together: one ack, or all the acks of a pair the
     * throttle held (so they are written in one row write, never split across transactions).
     */
    private final BlockingQueue<List<Pending>> queue = new LinkedBlockingQueue<>(100_000);
    private final AtomicLong acks = new AtomicLong();
    private final AtomicLong transactions = new AtomicLong();
    private final Thread[] writers;
    private final AckThrottle throttle;
    /** Acks of a pair waiting for the throttle, by pair key; guarded by itself. */
    private final Map<String, List<Pending>> held = new HashMap<>();
    private final AtomicLong heldAcks = new AtomicLong();
    private final ScheduledExecutorService releases;
    private volatile boolean running = true;

    public CursorWriter(CursorService service, Duration maxDelay, int maxBatch, int threads) {
        this(service, maxDelay, maxBatch, threads, Duration.ZERO);
    }

    /** @param throttle least time between two writes of one (device, conversation); zero: none */
    public CursorWriter(CursorService service, Duration maxDelay, int maxBatch, int threads, Duration throttle) {
        this.service = service;
        this.maxDelay = maxDelay;
        this.maxBatch = maxBatch;
        this.writers = new Thread[threads];
        this.throttle = new AckThrottle(throttle);
        this.releases = throttle.isZero() ? null : Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "cursor-throttle");
            t.setDaemon(true);
            return t;
        });
    }

    public CursorWriter start() {
        for (int i = 0; i < writers.length; i++) {
            writers[i] = new Thread(this::run, "cursor-writer-" + i);
            writers[i].setDaemon(true);
            writers[i].start();
        }
        return this;
    }

    /** Queues an ack; the future completes with the merged cursor or an {@link AckRejectedException}. */
    public CompletableFuture<Long> ack(DevicePrincipal who, String conv, long seq) {
        CompletableFuture<Long> f = new CompletableFuture<>();
        Pending p = new Pending(new AckRequest(who, conv, seq), f);
        if (running && releases != null && hold(p)) return f;
        enqueue(List.of(p));
        return f;
    }

    private void enqueue(List<Pending> unit) {
        if (!running || !queue.offer(unit)) {
            for (Pending p : unit) {
                p.reply().completeExceptionally(new im.infra.db.DatabaseUnavailableException("cursor writer saturated", null));
            }
        }
    }

    /** True if the throttle holds {@code p} (released later with the pair's other held acks). */
    private boolean hold(Pending p) {
        String pair = p.ack().pair();
        synchronized (held) {
            List<Pending> waiting = held.get(pair);
            if (waiting != null) {
                waiting.add(p);
                heldAcks.incrementAndGet();
                return true;
            }
            long now = System.nanoTime();
            long wait = throttle.admit(pair, now);
            if (wait == 0) return false;
            List<Pending> list = new ArrayList<>();
            list.add(p);
            held.put(pair, list);
            heldAcks.incrementAndGet();
            releases.schedule(() -> release(pair), wait, TimeUnit.NANOSECONDS);
            return true;
        }
    }

    private void release(String pair) {
        List<Pending> due;
        synchronized (held) {
            due = held.remove(pair);
            throttle.admitted(pair, System.nanoTime());
        }
        if (due != null) enqueue(due);   // one unit: the pair's held acks are written in one transaction
    }

    /** Acks the throttle made wait (each counted once). */
    public long heldAcks() {
        return heldAcks.get();
    }

    /** Acks received. */
    public long acks() {
        return acks.get();
    }

    /** Transactions that wrote cursors (each one upsert of the batch's distinct rows). */
    public long transactions() {
        return transactions.get();
    }

    private void run() {
        List<Pending> batch = new ArrayList<>(maxBatch);
        while (running || !queue.isEmpty()) {
            try {
                List<Pending> first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) continue;
                batch.addAll(first);
                long deadline = System.nanoTime() + maxDelay.toNanos();
                // A batch takes whole units: it may pass maxBatch by the acks of one held pair.
                while (batch.size() < maxBatch) {
                    long left = deadline - System.nanoTime();
                    List<Pending> next = left <= 0 ? queue.poll() : queue.poll(left, TimeUnit.NANOSECONDS);
                    if (next == null) break;
                    batch.addAll(next);
                }
                write(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } finally {
                batch.clear();
            }
        }
    }

    private void write(List<Pending> batch) {
        List<AckRequest> reqs = new ArrayList<>(batch.size());
        for (Pending p : batch) reqs.add(p.ack());
        acks.addAndGet(batch.size());
        try {
            List<CursorService.Outcome> out = service.ackBatch(reqs);
            transactions.incrementAndGet();
            for (int i = 0; i < batch.size(); i++) {
                CursorService.Outcome o = out.get(i);
                Pending p = batch.get(i);
                if (o.rejected() == null) {
                    p.reply().complete(o.delivered());
                } else {
                    p.reply().completeExceptionally(o.rejected());
                }
            }
        } catch (RuntimeException e) {
            log.warn("a batch of {} acks failed: {}", batch.size(), e.toString());
            for (Pending p : batch) p.reply().completeExceptionally(e);
        }
    }

    @Override
    public void close() {
        if (releases != null) {
            releases.shutdownNow();
            List<Pending> left = new ArrayList<>();
            synchronized (held) {
                held.values().forEach(left::addAll);
                held.clear();
            }
            if (!left.isEmpty()) enqueue(left);   // written before the writers stop, not dropped
        }
        running = false;
        for (Thread t : writers) {
            if (t == null) continue;
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
