package im.infra.role;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * What a process started, in start order; {@link #closeAll} closes it in reverse, each part once,
 * from the shutdown hook or after a failed start. A part that fails to close is reported on stderr
 * and does not keep the others open.
 */
public final class Closer {
    private final Deque<AutoCloseable> started = new ArrayDeque<>();

    /** Remembers {@code c} to be closed before everything pushed earlier; returns it. */
    public synchronized <T extends AutoCloseable> T push(T c) {
        started.push(c);
        return c;
    }

    public synchronized void closeAll() {
        while (!started.isEmpty()) {
            AutoCloseable c = started.pop();
            try {
                c.close();
            } catch (Exception e) {
                System.err.println("stopping " + c.getClass().getSimpleName() + ": " + e);
            }
        }
    }
}
