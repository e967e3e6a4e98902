package im.relay;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Linux timer slack of the thread that starts Debezium's engine, and so of every thread the
 * engine creates (a new thread inherits its creator's slack; proc(5), {@code timerslack_ns}).
 *
 * <p>Why: Debezium 3.6.1's change queue waits {@code await(remaining().toMillis())} on a
 * millisecond clock, so in the last millisecond of each {@code poll.interval.ms} the remaining
 * time truncates to 0 while the timer has not expired, and the poll thread spins until the clock
 * ticks: about 0.9 ms of busy CPU per 10 ms poll, 8 % of a core with nothing happening. The
 * default slack lets a timed wait end up to 50 µs late; with one millisecond the wait that would
 * end inside that last millisecond ends past the tick instead, where the spin would have ended
 * anyway, so the queue hands over its batch at the same moment without spinning. The other
 * engine threads' sleeps (the WAL reader's pause between empty reads) may end up to 1 ms late.
 * No setting of Debezium 3.6.1 avoids the spin (docs/benchmarks.md, "Idle CPU").
 *
 * <p>Best effort: where {@code /proc/<tid>/timerslack_ns} does not exist (not Linux) or
 * cannot be written, nothing changes and the relay works as before, spin included.
 */
final class TimerSlack {
    /** The engine threads' slack: one tick of the millisecond clock Debezium's queue waits on. */
    static final long ENGINE_NANOS = 1_000_000;
    private static final Path THREAD_SELF = Path.of("/proc/thread-self");

    private TimerSlack() {}

    /** Sets the calling thread's timer slack; false where that is not possible. */
    static boolean setForThisThread(long nanos) {
        try {
            Files.write(file(), Long.toString(nanos).getBytes(StandardCharsets.US_ASCII), StandardOpenOption.WRITE);
            return true;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    /**
     * {@code /proc/<tid>/timerslack_ns} of the calling thread: the file exists per process, not
     * under {@code task/}, but {@code /proc/<tid>} names one thread, and a thread may set its own.
     */
    private static Path file() throws IOException {
        Path link = Files.readSymbolicLink(THREAD_SELF);   // "<pid>/task/<tid>"
        return Path.of("/proc", link.getFileName().toString(), "timerslack_ns");
    }

    /** The calling thread's timer slack in nanoseconds, or -1 where it cannot be read. */
    static long ofThisThread() {
        try {
            return Long.parseLong(Files.readString(file(), StandardCharsets.US_ASCII).trim());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
