package im.client.internal;

import im.client.api.CaFile;
import im.client.api.ClientOptions;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parts of one {@link im.client.ImClient}, built with {@code new} and wired here: the
 * connection lifecycle ({@link Sessions}), the send side ({@link SendPath}), the receive side
 * ({@link ReceivePath}) and the listener callbacks, over the durable state of {@code stateDir}.
 * Each of the three runs on a {@link Lane} (one task at a time, in order) of the client's
 * {@link ClientThreads}: its own, stopped by {@link #close()}, or threads shared with other clients.
 */
public final class ClientCore implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ClientCore.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    /** The client's own threads (closed with it), or null when they are shared. */
    private final ClientThreads ownThreads;
    /** Reconnects and automatic resends (one lane, so they never overlap). */
    private final Lane scheduler;
    private final Listeners listeners;
    private final Sessions sessions;
    private final SendPath sending;
    private final ReceivePath receiving;
    private final StateDirLock lock;
    private final LocalStore store;
    /** Threads that may wait for a reply (the futures of the async API). */
    private final java.util.concurrent.Executor waiters;

    private ClientCore(ClientOptions options, Clock clock, LocalStore store, ClientFaults faults,
                       StateDirLock lock, ClientThreads shared, List<X509Certificate> ca) {
        this.store = store;
        String name = "im-client-" + INSTANCES.incrementAndGet();
        this.lock = lock;
        this.ownThreads = shared == null ? ClientThreads.ofOneClient(name) : null;
        ClientThreads threads = shared == null ? ownThreads : shared;
        this.scheduler = threads.blockingLane(name + "-scheduler");
        this.listeners = new Listeners(threads.workLane(name + "-callbacks"));
        RetryRule retry = RetryRule.of(options);
        PendingRequests.Rids rids = new PendingRequests.Rids();
        this.sessions = new Sessions(options, threads.http(ca), scheduler, listeners, retry, rids);
        this.sending = new SendPath(options, clock, store, sessions, listeners, retry, rids, scheduler, threads.io, threads.blocking);
        this.waiters = threads.blocking;
        this.receiving = new ReceivePath(options, store, sessions, listeners, retry, rids, faults, this::close,
                threads.storeLane(name + "-receive"), threads.blocking);
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
            public void sent(String cmid, Sent sent, boolean outboxEntry) {
                sending.onSent(cmid, sent, outboxEntry);
            }
        });
    }

    /**
     * Claims {@code stateDir} ({@link StateDirLock}: refused while another open client holds it)
     * and loads its durable state (creating the directory if missing); the receive path runs
     * {@code faults} ({@link ClientFaults#NONE} but in the SDK's own tests). With {@code shared} null the client gets
     * threads of its own, else it runs on those (which must stay open while the client is).
     * A {@code caFile} is read first: {@link im.client.api.CaFileException} if it cannot be used.
     */
    public static ClientCore open(ClientOptions options, Clock clock, ClientThreads shared, ClientFaults faults) throws IOException {
        // Before the state directory is claimed: a bad CA file leaves nothing to undo.
        List<X509Certificate> ca = options.caFile() == null ? null : CaFile.certificates(options.caFile());
        StateDirLock lock = StateDirLock.acquire(options.stateDir());
        try {
            LocalStore store = LocalStore.open(options.stateDir());
            try {
                LegacyState.importInto(options.stateDir(), store);
                return new ClientCore(options, clock, store, java.util.Objects.requireNonNull(faults, "faults"), lock, shared, ca);
            } catch (IOException | RuntimeException e) {
                store.close();
                throw e;
            }
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

    /** Where the async API waits: threads added on demand, never a lane of the client. */
    public java.util.concurrent.Executor waiters() {
        return waiters;
    }

    public Listeners listeners() {
        return listeners;
    }

    /**
     * Disconnects, stops the lanes and, once those that write the state directory (scheduler:
     * outbox resends; receiver: event batches) have stopped, releases the directory for the next
     * client; then stops the client's own threads, if it has any. A store commit under way finishes
     * or is abandoned before that; either leaves the directory consistent. Idempotent.
     */
    @Override
    public void close() {
        if (!sessions.markClosed()) {
            return;
        }
        sessions.disconnect();
        sessions.reportClosed();
        scheduler.shutdownNow();
        receiving.shutdown();
        listeners.shutdown(); // queued callbacks (e.g. the final onDisconnected) still run
        // Called from one of its own lanes (a simulated crash closes from the receive lane, a
        // listener may close the client), it cannot wait for that lane: it writes nothing more
        // once it returns from here.
        if (!scheduler.runsHere() && !scheduler.awaitStopped(STOP_WAIT_MILLIS)) {
            log.warn("the scheduler lane did not stop within {} ms", STOP_WAIT_MILLIS);
        }
        if (!receiving.runsHere() && !receiving.awaitStopped(STOP_WAIT_MILLIS)) {
            log.warn("the receive lane did not stop within {} ms; releasing the state directory anyway", STOP_WAIT_MILLIS);
        }
        store.close(); // after the receive lane: a commit under way finishes first
        lock.close();
        if (ownThreads != null) {
            ownThreads.close(); // queued callbacks still run; then the threads end
        }
    }

    private static final long STOP_WAIT_MILLIS = 30_000;
}
