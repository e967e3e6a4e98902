package im.client.internal;

import im.client.api.ClientListener;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The client's listeners and the lane that calls them, in order, one at a time, off the socket reader. */
public final class Listeners {
    private static final Logger log = LoggerFactory.getLogger(Listeners.class);

    private final List<ClientListener> listeners = new CopyOnWriteArrayList<>();
    private final Lane callbacks;

    Listeners(Lane callbacks) {
        this.callbacks = callbacks;
    }

    public void add(ClientListener l) {
        listeners.add(Objects.requireNonNull(l, "listener"));
    }

    void fire(String what, Consumer<ClientListener> call) {
        fire(what, call, null);
    }

    /** Calls every listener on the callback lane; {@code before} (if any) runs there first. */
    void fire(String what, Consumer<ClientListener> call, Runnable before) {
        try {
            callbacks.execute(() -> {
                if (before != null) {
                    before.run();
                }
                for (ClientListener l : listeners) {
                    try {
                        call.accept(l);
                    } catch (RuntimeException e) {
                        // A faulty listener must not stop the callbacks of the others or of later events.
                        log.warn("listener {} threw in {}", l, what, e);
                    }
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("client closed; {} not delivered", what);
        }
    }

    /** Queued callbacks (e.g. the final onDisconnected) still run. */
    public void shutdown() {
        callbacks.shutdown();
    }

    /** Daemon threads named {@code prefix-1}, {@code prefix-2}, ... */
    public static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
