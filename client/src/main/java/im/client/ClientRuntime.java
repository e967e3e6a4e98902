package im.client;

import im.client.api.ClientOptions;
import im.client.internal.ClientThreads;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Threads that many {@link ImClient} instances of one process share: a fixed number of worker
 * threads, one JDK {@code HttpClient} (one selector thread for every socket) and one timer,
 * instead of about five threads per client. For processes that host many devices (a bot
 * platform, a bridge, a load generator); an app with one client needs none: without a runtime,
 * {@link ImClient#open(ClientOptions)} gives the client threads of its own.
 *
 * <p>What a client guarantees does not change: its listener callbacks still run in order, one at
 * a time, off the socket reader; its receive path and its reconnects/resends each run one task at
 * a time. They run on the runtime's threads instead of threads of their own, so a listener that
 * blocks for long holds one of the {@code workers} callback threads for every client: hand long work to an
 * executor of your own. Reconnects and resends (which wait for replies) run on threads that the
 * runtime adds on demand, so waiting clients never hold up the others; store writes have threads of their
 * own, so a slow disk delays no listener.
 *
 * <p>Close the clients first, then the runtime; a client still open on a closed runtime stops
 * working (its tasks are dropped).
 */
public final class ClientRuntime implements AutoCloseable {
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    /** The default number of worker threads: the number of processors, at least 2. */
    public static final int DEFAULT_WORKERS = Math.max(2, Runtime.getRuntime().availableProcessors());

    private final String name;
    private final ClientThreads threads;

    private ClientRuntime(String name, ClientThreads threads) {
        this.name = name;
        this.threads = threads;
    }

    /** A runtime with {@link #DEFAULT_WORKERS} worker threads. */
    public static ClientRuntime create() {
        return create(DEFAULT_WORKERS);
    }

    /**
     * A runtime with {@code workers} threads each for socket reads, the clients' callbacks and
     * their receive paths' store writes (named {@code im-clients-N-io-K}, {@code im-clients-N-work-K},
     * {@code im-clients-N-store-K}): a store write waiting for a slow disk holds up other clients'
     * store writes, never their callbacks.
     *
     * @throws IllegalArgumentException if {@code workers} is below 1
     */
    public static ClientRuntime create(int workers) {
        String name = "im-clients-" + INSTANCES.incrementAndGet();
        return new ClientRuntime(name, ClientThreads.shared(name, workers));
    }

    /** The prefix of this runtime's thread names, {@code im-clients-N}. */
    public String name() {
        return name;
    }

    ClientThreads threads() {
        return threads;
    }

    /** Stops the threads once the queued callbacks ran; idempotent. Close the clients on this runtime first. */
    @Override
    public void close() {
        threads.close();
    }
}
