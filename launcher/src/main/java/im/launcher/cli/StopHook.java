package im.launcher.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Ctrl-C for a following command: on JVM shutdown runs {@code onStop} (which makes the command's
 * loop end) and waits up to 3 s for the command to finish cleanly, i.e. until {@link #close()}.
 */
final class StopHook implements AutoCloseable {
    private final CountDownLatch done = new CountDownLatch(1);
    private final Thread hook;

    StopHook(String name, Runnable onStop) {
        hook = new Thread(() -> {
            onStop.run();
            try {
                done.await(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        Runtime.getRuntime().addShutdownHook(hook);
    }

    @Override
    public void close() {
        done.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // Ctrl-C: the hook is running and waits for done
        }
    }
}
