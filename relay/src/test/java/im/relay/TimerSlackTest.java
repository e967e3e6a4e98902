package im.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The Linux timer slack the relay gives Debezium's engine threads (see {@link TimerSlack}). */
class TimerSlackTest {

    /** What the relay relies on: the engine thread sets its slack, and the threads it starts inherit it. */
    @Test
    void aThreadSetsItsOwnSlackAndTheThreadsItStartsInheritIt() throws Exception {
        AtomicReference<Boolean> set = new AtomicReference<>();
        AtomicLong own = new AtomicLong();
        AtomicLong child = new AtomicLong();
        Thread engine = new Thread(() -> {
            set.set(TimerSlack.setForThisThread(TimerSlack.ENGINE_NANOS));
            own.set(TimerSlack.ofThisThread());
            Thread started = new Thread(() -> child.set(TimerSlack.ofThisThread()));
            started.start();
            try {
                started.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        engine.start();
        engine.join();
        assertTrue(set.get(), "the platform runs on Linux, where a thread may set its own slack");
        assertEquals(TimerSlack.ENGINE_NANOS, own.get());
        assertEquals(TimerSlack.ENGINE_NANOS, child.get());
    }
}
