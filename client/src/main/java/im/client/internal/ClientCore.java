package im.client.internal;

import im.client.ClientOptions;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.time.Clock;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parts of one {@link im.client.ImClient}, built with {@code new} and wired here: the
 * connection lifecycle ({@link Sessions}), the send side ({@link SendPath}), the receive side
 * ({@link ReceivePath}) and the listener thread, over the durable state of {@code stateDir}.
 * All threads are daemons and are stopped by {@link #close()}.
 */
public final class ClientCore implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ClientCore.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final ExecutorService httpExecutor;
    /** Reconnects and automatic resends (one thread, so they never overlap). */
    private final ScheduledExecutorService scheduler;
    private final Listeners listeners;
    private final Sessions sessions;
    private final SendPath sending;
    private final ReceivePath receiving;
    private final StateDirLock lock;
    /** Prefix of every thread of this client ({@code im-client-N-}). */
    private final String threadPrefix;
    private final DurableEventStore store;

    private ClientCore(ClientOptions options, Clock clock, DurableOutbox outbox, DurableEventStore store, ClientFaults faults,
                       StateDirLock lock) {
        this.store = store;
        String name = "im-client-" + INSTANCES.incrementAndGet();
        this.lock = lock;
        this.threadPrefix = name + "-";
        this.httpExecutor = Executors.newCachedThreadPool(Listeners.daemonThreads(name + "-io"));
        this.scheduler = Executors.newSingleThreadScheduledExecutor(Listeners.daemonThreads(name + "-scheduler"));
        this.listeners = new Listeners(name + "-callbacks");
        RetryRule retry = RetryRule.of(options);
        PendingRequests.Rids rids = new PendingRequests.Rids();
        this.sessions = new Sessions(options, httpExecutor, scheduler, listeners, retry, rids);
        this.sending = new SendPath(options, clock, outbox, sessions, listeners, retry, rids, scheduler, httpExecutor);
        this.receiving = new ReceivePath(options, store, sessions, listeners, retry, rids, faults, this::close, name + "-receive");
        sessions.hooks(new Sessions.Hooks() {
            @Override
            public void connected(Connection conn) {
                receiving.connected(conn);
                if (options.autoReconnect()) {
                    sending.resendLater();
                }
            }

            @Override
            public void unmatched(Connection conn, ServerFrame frame) {
                receiving.onUnmatched(conn, frame);
                listeners.fire("onPush", l -> l.onPush(frame));
            }

            @Override
            public void sent(Send send, Sent sent, boolean outboxEntry) {
                sending.onSent(send, sent, outboxEntry);
            }
        });
    }

    /**
     * Claims {@code stateDir} ({@link StateDirLock}: refused while another open client holds it)
     * and loads its durable state (creating the directory if missing); with the fault hooks of a
     * {@link FaultInjection#open} on this thread, if any.
     */
    public static ClientCore open(ClientOptions options, Clock clock) throws IOException {
        StateDirLock lock = StateDirLock.acquire(options.stateDir());
        try {
            DurableOutbox outbox = DurableOutbox.open(options.stateDir());
            DurableEventStore store = DurableEventStore.open(options.stateDir());
            return new ClientCore(options, clock, outbox, store, FaultInjection.forOpening(), lock);
        } catch (IOException | RuntimeException e) {
            lock.close();
            throw e;
        }
    }

    public Sessions sessions() {
        return sessions;
    }

    public SendPath sending() {
        return sending;
    }

    public ReceivePath receiving() {
        return receiving;
    }

    public Listeners listeners() {
        return listeners;
    }

    /**
     * Disconnects, stops the threads and, once those that write the state directory (scheduler:
     * outbox resends; receiver: the event store) have stopped, releases the directory for the next
     * client. A store commit under way finishes or is abandoned before that; either leaves the
     * directory consistent. Idempotent.
     */
    @Override
    public void close() {
        if (!sessions.markClosed()) {
            return;
        }
        sessions.disconnect();
        scheduler.shutdownNow();
        receiving.shutdown();
        listeners.shutdown(); // queued callbacks (e.g. the final onDisconnected) still run on the daemon thread
        httpExecutor.shutdownNow();
        // Called from one of our own threads (a simulated crash closes from the receive thread), it
        // cannot wait for itself: that thread writes nothing more once it returns from here.
        if (!Thread.currentThread().getName().startsWith(threadPrefix)) {
            awaitStopped(scheduler, "scheduler");
            if (!receiving.awaitStopped(STOP_WAIT_MILLIS)) {
                log.warn("the receive thread did not stop within {} ms; releasing the state directory anyway", STOP_WAIT_MILLIS);
            }
        }
        store.close(); // after the receive thread: a commit under way finishes first
        lock.close();
    }

    private static final long STOP_WAIT_MILLIS = 30_000;

    private static void awaitStopped(ExecutorService e, String what) {
        try {
            if (!e.awaitTermination(STOP_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                log.warn("the {} thread did not stop within {} ms", what, STOP_WAIT_MILLIS);
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }
}
