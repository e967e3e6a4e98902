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

    /** Polls {@code condition} for {@code period}; fails naming {@code what} at the first poll where it does not hold. */
    public static void holdsFor(Duration period, BooleanSupplier condition, String what) {
        long end = System.nanoTime() + period.toNanos();
        while (System.nanoTime() < end) {
            if (!condition.getAsBoolean()) throw new AssertionError("did not hold for " + period + ": " + what);
            LockSupport.parkNanos(10_000_000);
        }
    }
}
