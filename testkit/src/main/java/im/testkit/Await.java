package im.testkit;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Polls a condition until a deadline (tests never sleep for a fixed time). */
public final class Await {
    private Await() {}

    /** Returns once {@code condition} holds; fails naming {@code what} if it does not within {@code timeout}. */
    public static void until(Duration timeout, BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within " + timeout + ": " + what);
            LockSupport.parkNanos(10_000_000);
        }
    }
}
