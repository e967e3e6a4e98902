package im.client.internal;

import im.client.api.CaFile;
import java.net.http.HttpClient;
import java.security.cert.X509Certificate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The threads clients run on, and the JDK {@link HttpClient} (with its selector thread) that opens
 * their WebSockets. Either one client's own ({@link #ofOneClient}: pools that grow with demand, as
 * if each lane had a thread) or shared by many clients of one process ({@link #shared}: a fixed
 * number of worker threads, one selector for every socket), which costs far less CPU per message
 * when a process hosts hundreds of clients: fewer threads wake up, and a busy thread takes the
 * next client's task without sleeping.
 *
 * <ul>
 *   <li>{@code io}: the HttpClient's executor (socket reads, reply dispatch; never blocks for long)
 *       and the outbox's error judgements;</li>
 *   <li>{@code work}: the lanes of the listener callbacks;</li>
 *   <li>{@code store}: the lanes of the receive path, whose store writes wait for fsync: apart
 *       from the callbacks, so a slow disk delays no client's listeners;</li>
 *   <li>{@code blocking}: the scheduler lanes (reconnects and resends wait for replies), a pool
 *       that grows with demand, so waiting clients never hold up the others;</li>
 *   <li>{@code timer}: delays (ack windows, backoffs); its tasks only queue work on a lane.</li>
 * </ul>
 *
 * <p>Clients with a {@code caFile} open their sockets with an {@code HttpClient} that trusts those
 * certificates: one per distinct set of certificates, on the same {@code io} pool.
 */
public final class ClientThreads implements AutoCloseable {
    final ScheduledThreadPoolExecutor timer;
    final ExecutorService io;
    final ExecutorService work;
    final ExecutorService store;
    final ExecutorService blocking;
    final HttpClient http;
    /** The HttpClients of clients with a CA file, by its certificates. Guarded by itself. */
    private final Map<List<X509Certificate>, HttpClient> trusting = new HashMap<>();

    /** {@code workers} 0: one client's pools, which grow with demand. */
    private ClientThreads(String name, int workers) {
        this.timer = new ScheduledThreadPoolExecutor(1, Listeners.daemonThreads(name + "-timer"));
        timer.setRemoveOnCancelPolicy(true); // cancelled ack windows and backoffs leave the queue at once
        if (workers > 0) {
            this.io = Executors.newFixedThreadPool(workers, Listeners.daemonThreads(name + "-io"));
            this.work = Executors.newFixedThreadPool(workers, Listeners.daemonThreads(name + "-work"));
            this.store = Executors.newFixedThreadPool(workers, Listeners.daemonThreads(name + "-store"));
            this.blocking = Executors.newCachedThreadPool(Listeners.daemonThreads(name + "-blocking"));
        } else {
            this.io = Executors.newCachedThreadPool(Listeners.daemonThreads(name + "-io"));
            this.work = Executors.newCachedThreadPool(Listeners.daemonThreads(name + "-work"));
            this.store = work;
            this.blocking = work;
        }
        this.http = HttpClient.newBuilder().executor(io).build();
    }

    /** One client's threads, named {@code name-io-1}, {@code name-work-1}, ...; closed with the client. */
    public static ClientThreads ofOneClient(String name) {
        return new ClientThreads(name, 0);
    }

    /** Threads for many clients: {@code workers} io, work and store threads each (at least 1). */
    public static ClientThreads shared(String name, int workers) {
        if (workers < 1) {
            throw new IllegalArgumentException("workers: must be at least 1, got " + workers);
        }
        return new ClientThreads(name, workers);
    }

    /** The HttpClient for sockets that trust exactly {@code ca} (null: the JVM's trust store). */
    HttpClient http(List<X509Certificate> ca) {
        if (ca == null) {
            return http;
        }
        synchronized (trusting) {
            return trusting.computeIfAbsent(ca, c -> HttpClient.newBuilder().executor(io).sslContext(CaFile.sslContext(c)).build());
        }
    }

    /** A serial lane for the listener callbacks. */
    Lane workLane(String name) {
        return new Lane(name, work, timer);
    }

    /** A serial lane for the receive path (store writes). */
    Lane storeLane(String name) {
        return new Lane(name, store, timer);
    }

    /** A serial lane whose tasks may wait for replies (reconnects, resends). */
    Lane blockingLane(String name) {
        return new Lane(name, blocking, timer);
    }

    /**
     * Stops every thread once the lanes' queued tasks (e.g. final callbacks) ran; pending delays
     * are dropped. Close the clients using these threads first: their later work is dropped.
     */
    @Override
    public void close() {
        timer.shutdownNow();
        io.shutdownNow();
        work.shutdown();
        store.shutdown();
        blocking.shutdown();
    }
}
