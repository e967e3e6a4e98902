package im.store.cursor;

import im.infra.db.DatabaseUnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit of small cursor writes (device acks, user reads): concurrent requests are collected
 * for at most {@code maxDelay} after the first one arrives, or until {@code maxBatch} are waiting,
 * and written by one call of the batch function, in one transaction, on one of {@code threads}
 * writer threads. The writers are the only threads that hold a database connection for these
 * writes, so however many requests arrive, they hold at most {@code threads} connections and never
 * the gateway's worker pool (where sends run). Under light load a batch is a single request and the
 * extra delay is the collection window only.
 *
 * <p><b>Per-key throttle</b> ({@code throttle > 0}): one key (an ack's (device, conversation), a
 * read's (user, conversation)) is let through to a write at most once per {@code throttle}. The first
 * request after a quiet spell goes at once (so latency at low load is unchanged); a request arriving
 * sooner waits until the interval since the key's last write has passed, and every request of the key
 * arriving meanwhile waits with it and is written in the same batch. A key written often therefore
 * costs one row write, one WAL record and one cursor record per interval instead of one per request;
 * each request is still answered only once its write committed.
 *
 * @param <Q> a request
 * @param <R> what a request is answered with
 */
final class GroupCommit<Q, R> implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    /** The outcome of one request of a batch: its answer, or why it was refused. */
    record Outcome<R>(R value, RuntimeException rejected) {
        static <R> Outcome<R> of(R value) {
            return new Outcome<>(value, null);
        }

        static <R> Outcome<R> refused(RuntimeException why) {
            return new Outcome<>(null, why);
        }
    }

    private record Pending<Q, R>(Q request, CompletableFuture<R> reply) {}

    private final String name;
    private final Function<List<Q>, List<Outcome<R>>> write;
    private final Function<Q, String> key;
    private final Duration maxDelay;
    private final int maxBatch;
    /**
     * Units of requests that go into one batch together: one request, or all the requests of a key
     * the throttle held (so they are written together, never split across transactions).
     */
    private final BlockingQueue<List<Pending<Q, R>>> queue = new LinkedBlockingQueue<>(100_000);
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong transactions = new AtomicLong();
    private final Thread[] writers;
    private final AckThrottle throttle;
    /** Requests of a key waiting for the throttle, by key; guarded by itself. */
    private final Map<String, List<Pending<Q, R>>> held = new HashMap<>();
    private final AtomicLong heldRequests = new AtomicLong();
    private final ScheduledExecutorService releases;
    private volatile boolean running = true;

    /**
     * @param name     names the threads ({@code <name>-writer-i}) and the log lines
     * @param write    writes a batch in one transaction; outcomes in request order
     * @param key      the key requests are throttled by
     * @param throttle least time between two writes of one key; zero: none
     */
    GroupCommit(String name, Function<List<Q>, List<Outcome<R>>> write, Function<Q, String> key,
                Duration maxDelay, int maxBatch, int threads, Duration throttle) {
        this.name = name;
        this.write = write;
        this.key = key;
        this.maxDelay = maxDelay;
        this.maxBatch = maxBatch;
        this.writers = new Thread[threads];
        this.throttle = new AckThrottle(throttle);
        this.releases = throttle.isZero() ? null : Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name + "-throttle");
            t.setDaemon(true);
            return t;
        });
    }

    GroupCommit<Q, R> start() {
        for (int i = 0; i < writers.length; i++) {
            writers[i] = new Thread(this::run, name + "-writer-" + i);
            writers[i].setDaemon(true);
            writers[i].start();
        }
        return this;
    }

    /** Queues a request; the future completes with its answer or its refusal. */
    CompletableFuture<R> submit(Q request) {
        CompletableFuture<R> f = new CompletableFuture<>();
        Pending<Q, R> p = new Pending<>(request, f);
        if (running && releases != null && hold(p)) return f;
        enqueue(List.of(p));
        return f;
    }

    private void enqueue(List<Pending<Q, R>> unit) {
        if (!running || !queue.offer(unit)) {
            for (Pending<Q, R> p : unit) {
                p.reply().completeExceptionally(new DatabaseUnavailableException(name + " writer saturated", null));
            }
        }
    }

    /** True if the throttle holds {@code p} (released later with the key's other held requests). */
    private boolean hold(Pending<Q, R> p) {
        String k = key.apply(p.request());
        synchronized (held) {
            List<Pending<Q, R>> waiting = held.get(k);
            if (waiting != null) {
                waiting.add(p);
                heldRequests.incrementAndGet();
                return true;
            }
            long now = System.nanoTime();
            long wait = throttle.admit(k, now);
            if (wait == 0) return false;
            List<Pending<Q, R>> list = new ArrayList<>();
            list.add(p);
            held.put(k, list);
            heldRequests.incrementAndGet();
            releases.schedule(() -> release(k), wait, TimeUnit.NANOSECONDS);
            return true;
        }
    }

    private void release(String k) {
        List<Pending<Q, R>> due;
        synchronized (held) {
            due = held.remove(k);
            throttle.admitted(k, System.nanoTime());
        }
        if (due != null) enqueue(due);   // one unit: the key's held requests are written in one transaction
    }

    /** Requests the throttle made wait (each counted once). */
    long held() {
        return heldRequests.get();
    }

    /** Requests written (answered or refused by a batch). */
    long requests() {
        return requests.get();
    }

    /** Batches written, each in one transaction. */
    long transactions() {
        return transactions.get();
    }

    private void run() {
        List<Pending<Q, R>> batch = new ArrayList<>(maxBatch);
        while (running || !queue.isEmpty()) {
            try {
                List<Pending<Q, R>> first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) continue;
                batch.addAll(first);
                long deadline = System.nanoTime() + maxDelay.toNanos();
                // A batch takes whole units: it may pass maxBatch by the requests of one held key.
                while (batch.size() < maxBatch) {
                    long left = deadline - System.nanoTime();
                    List<Pending<Q, R>> next = left <= 0 ? queue.poll() : queue.poll(left, TimeUnit.NANOSECONDS);
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

    private void write(List<Pending<Q, R>> batch) {
        List<Q> reqs = new ArrayList<>(batch.size());
        for (Pending<Q, R> p : batch) reqs.add(p.request());
        requests.addAndGet(batch.size());
        try {
            List<Outcome<R>> out = write.apply(reqs);
            transactions.incrementAndGet();
            for (int i = 0; i < batch.size(); i++) {
                Outcome<R> o = out.get(i);
                CompletableFuture<R> reply = batch.get(i).reply();
                if (o.rejected() == null) {
                    reply.complete(o.value());
                } else {
                    reply.completeExceptionally(o.rejected());
                }
            }
        } catch (RuntimeException e) {
            log.warn("a batch of {} {} requests failed: {}", batch.size(), name, e.toString());
            for (Pending<Q, R> p : batch) p.reply().completeExceptionally(e);
        }
    }

    @Override
    public void close() {
        if (releases != null) {
            releases.shutdownNow();
            List<Pending<Q, R>> left = new ArrayList<>();
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
