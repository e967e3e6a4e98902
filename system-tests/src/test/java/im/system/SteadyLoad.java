package im.system;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.SentAck;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A steady send load for failover tests: one thread sends to {@code conv} through {@code sender}
 * every {@code intervalMs}, keeping every confirmed seq; a failed send (UNAVAILABLE, timeout) is
 * counted and left in the client's outbox, which the client resends itself. A listener on the
 * receiver counts connections (a failover must not cost one) and stamps pushes, so a test can
 * read the time from a fault to the first {@code sent} and the first push of an event committed
 * after it. Errors of the sending thread are kept and rethrown by {@link #stop()}.
 */
final class SteadyLoad implements AutoCloseable {
    private final ImClient sender;
    private final String conv;
    private final long intervalMs;
    private final NavigableSet<Long> confirmed = new ConcurrentSkipListSet<>();
    /** cmid -> the seq its {@code sent} named. */
    private final Map<String, Long> acknowledged = new ConcurrentHashMap<>();
    /** seq -> first time (nanoTime) the receiver got it pushed. */
    private final Map<Long, Long> pushedAt = new ConcurrentHashMap<>();
    /** seq -> time (nanoTime) its send was confirmed. */
    private final Map<Long, Long> sentAt = new ConcurrentHashMap<>();
    private final AtomicInteger failures = new AtomicInteger();
    private final List<Throwable> errors = new CopyOnWriteArrayList<>();
    private final AtomicInteger senderConnects = new AtomicInteger();
    private final AtomicInteger receiverConnects = new AtomicInteger();
    private final AtomicLong sends = new AtomicLong();
    private volatile boolean running = true;
    private final Thread thread;

    SteadyLoad(ImClient sender, ImClient receiver, String conv, long intervalMs) {
        this.sender = sender;
        this.conv = conv;
        this.intervalMs = intervalMs;
        sender.addListener(new ClientListener() {
            @Override
            public void onConnected() {
                senderConnects.incrementAndGet();
            }

            @Override
            public void onSent(SentAck ack) {
                // Also automatic resends of entries whose first attempt failed.
                if (ack.conv().equals(conv)) confirm(ack);
            }
        });
        receiver.addListener(new ClientListener() {
            @Override
            public void onConnected() {
                receiverConnects.incrementAndGet();
            }

            @Override
            public void onPush(ServerFrame frame) {
                if (frame instanceof EventPush p && p.ev().conv().equals(conv)) pushedAt.putIfAbsent(p.ev().seq(), System.nanoTime());
            }
        });
        thread = new Thread(this::run, "steady-load-" + conv);
        thread.setDaemon(true);
    }

    SteadyLoad start() {
        thread.start();
        return this;
    }

    private void run() {
        long next = System.nanoTime();
        while (running) {
            try {
                sends.incrementAndGet();
                confirm(sender.send(conv, "load " + sends.get()));
            } catch (java.io.IOException e) {
                failures.incrementAndGet();   // the entry stays in the outbox; the client resends it
            } catch (Throwable t) {
                errors.add(t);
                return;
            }
            next += TimeUnit.MILLISECONDS.toNanos(intervalMs);
            long wait = next - System.nanoTime();
            if (wait > 0) LockSupport.parkNanos(wait);
            else next = System.nanoTime();
        }
    }

    private void confirm(SentAck ack) {
        sentAt.putIfAbsent(ack.seq(), System.nanoTime());
        confirmed.add(ack.seq());
        Long prev = acknowledged.putIfAbsent(ack.cmid(), ack.seq());
        if (prev != null && prev != ack.seq()) {
            errors.add(new AssertionError(ack.cmid() + " confirmed with seq " + prev + " and then " + ack.seq()));
        }
    }

    /** cmid -> seq of every message confirmed so far. */
    Map<String, Long> acknowledged() {
        return Map.copyOf(acknowledged);
    }

    /** Stops sending; rethrows what the sending thread failed with. */
    void stop() throws InterruptedException {
        running = false;
        thread.join(30_000);
        if (thread.isAlive()) throw new AssertionError("the load thread did not stop");
        if (!errors.isEmpty()) throw new AssertionError("the load thread failed", errors.get(0));
    }

    /** Every seq confirmed by a {@code sent} so far (also of automatic resends). */
    NavigableSet<Long> confirmed() {
        return confirmed;
    }

    long highestConfirmed() {
        return confirmed.isEmpty() ? 0 : confirmed.last();
    }

    int failures() {
        return failures.get();
    }

    int senderConnects() {
        return senderConnects.get();
    }

    int receiverConnects() {
        return receiverConnects.get();
    }

    /** Whether an event with a seq above {@code seq} has been pushed to the receiver. */
    boolean pushedAbove(long seq) {
        return pushedAt.keySet().stream().anyMatch(s -> s > seq);
    }

    /** Milliseconds from {@code since} (nanoTime) to the first push of an event with a seq above {@code seq}; -1 if none. */
    long msToFirstPushAbove(long seq, long since) {
        return pushedAt.entrySet().stream().filter(e -> e.getKey() > seq).mapToLong(Map.Entry::getValue).min()
                .stream().map(t -> TimeUnit.NANOSECONDS.toMillis(t - since)).findFirst().orElse(-1);
    }

    /** Milliseconds from {@code since} (nanoTime) to the first {@code sent} of a seq above {@code seq}; -1 if none. */
    long msToFirstSentAbove(long seq, long since) {
        return sentAt.entrySet().stream().filter(e -> e.getKey() > seq).mapToLong(Map.Entry::getValue).min()
                .stream().map(t -> TimeUnit.NANOSECONDS.toMillis(t - since)).findFirst().orElse(-1);
    }

    @Override
    public void close() {
        running = false;
    }
}
