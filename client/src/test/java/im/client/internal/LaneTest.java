package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The serial lanes that clients share pool threads with: order, one at a time, fairness, shutdown. */
class LaneTest {
    private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
    private final List<ExecutorService> pools = new ArrayList<>();

    private ExecutorService pool(int threads) {
        ExecutorService p = Executors.newFixedThreadPool(threads);
        pools.add(p);
        return p;
    }

    @AfterEach
    void stop() {
        timer.shutdownNow();
        pools.forEach(ExecutorService::shutdownNow);
    }

    @Test
    void eachLaneRunsItsTasksInOrderOneAtATimeWhileLanesShareThePool() throws Exception {
        ExecutorService pool = pool(4);
        int lanes = 50;
        int perLane = 2_000;
        List<List<Integer>> seen = new ArrayList<>();
        AtomicInteger overlaps = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(lanes);
        for (int l = 0; l < lanes; l++) {
            Lane lane = new Lane("lane-" + l, pool, timer);
            List<Integer> order = new ArrayList<>(); // not synchronized: the lane's hand-off must make it visible
            seen.add(order);
            AtomicBoolean running = new AtomicBoolean();
            for (int i = 0; i < perLane; i++) {
                int n = i;
                lane.execute(() -> {
                    if (!running.compareAndSet(false, true)) overlaps.incrementAndGet();
                    order.add(n);
                    running.set(false);
                    if (n == perLane - 1) done.countDown();
                });
            }
        }
        assertTrue(done.await(30, TimeUnit.SECONDS), "every lane ran its tasks");
        assertEquals(0, overlaps.get(), "two tasks of one lane ran at the same time");
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < perLane; i++) expected.add(i);
        for (List<Integer> order : seen) assertEquals(expected, order);
    }

    @Test
    void aBusyLaneYieldsTheOnlyThreadToAnotherLaneAfterATurn() throws Exception {
        ExecutorService pool = pool(1);
        Lane busy = new Lane("busy", pool, timer);
        Lane other = new Lane("other", pool, timer);
        CountDownLatch gate = new CountDownLatch(1);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        busy.execute(() -> await(gate)); // holds the thread until the other lane has queued its task
        int busyTasks = Lane.TURN * 10;
        for (int i = 0; i < busyTasks; i++) {
            int n = i;
            busy.execute(() -> {
                if (n == busyTasks - 1) events.add("busy done");
            });
        }
        CountDownLatch otherRan = new CountDownLatch(1);
        other.execute(() -> {
            events.add("other ran");
            otherRan.countDown();
        });
        gate.countDown();
        assertTrue(otherRan.await(10, TimeUnit.SECONDS));
        CountDownLatch busyDone = new CountDownLatch(1);
        busy.execute(busyDone::countDown);
        assertTrue(busyDone.await(10, TimeUnit.SECONDS));
        assertEquals(List.of("other ran", "busy done"), events, "the other lane waited for all of the busy lane's tasks");
    }

    @Test
    void shutdownNowDropsQueuedTasksInterruptsTheRunningOneAndRejectsNewOnes() throws Exception {
        Lane lane = new Lane("l", pool(2), timer);
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicBoolean queuedRan = new AtomicBoolean();
        CountDownLatch never = new CountDownLatch(1);
        lane.execute(() -> {
            started.countDown();
            try {
                never.await(30, TimeUnit.SECONDS); // only an interrupt ends this wait early
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
        });
        lane.execute(() -> queuedRan.set(true));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        lane.shutdownNow();
        assertTrue(lane.awaitStopped(10_000));
        assertTrue(interrupted.get(), "the running task was interrupted");
        assertFalse(queuedRan.get(), "a queued task ran after shutdownNow");
        assertThrows(RejectedExecutionException.class, () -> lane.execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> lane.schedule(() -> { }, 1, TimeUnit.MILLISECONDS));
    }

    @Test
    void shutdownStillRunsTheQueuedTasksAllOfThemInOneTurn() throws Exception {
        ExecutorService pool = pool(1);
        Lane lane = new Lane("l", pool, timer);
        CountDownLatch gate = new CountDownLatch(1);
        AtomicInteger ran = new AtomicInteger();
        lane.execute(() -> await(gate));
        int queued = Lane.TURN * 3;
        for (int i = 0; i < queued; i++) lane.execute(ran::incrementAndGet);
        lane.shutdown();
        pool.shutdown(); // no new turn would be accepted now
        gate.countDown();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(queued, ran.get());
    }

    @Test
    void aLaneTaskCanAwaitAnotherLaneOnAOneThreadPool() throws Exception {
        // A listener closing its client waits for the receive lane; on a shared pool whose only thread
        // runs that listener, the receive lane's queued turn can never run, and must not be waited for.
        ExecutorService pool = pool(1);
        Lane callbacks = new Lane("callbacks", pool, timer);
        Lane receive = new Lane("receive", pool, timer);
        CountDownLatch gate = new CountDownLatch(1);
        AtomicBoolean stopped = new AtomicBoolean();
        CountDownLatch closed = new CountDownLatch(1);
        callbacks.execute(() -> {
            await(gate);
            receive.shutdownNow();
            stopped.set(receive.awaitStopped(5_000));
            closed.countDown();
        });
        receive.execute(() -> { }); // its turn is queued behind the callback on the only thread
        gate.countDown();
        assertTrue(closed.await(10, TimeUnit.SECONDS));
        assertTrue(stopped.get(), "awaitStopped waited for a turn that could not run");
    }

    @Test
    void runsHereIsTrueOnlyInsideTheLanesOwnTask() throws Exception {
        Lane a = new Lane("a", pool(1), timer);
        Lane b = new Lane("b", pool(1), timer);
        List<Boolean> answers = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(1);
        a.execute(() -> {
            answers.add(a.runsHere());
            answers.add(b.runsHere());
            done.countDown();
        });
        assertTrue(done.await(10, TimeUnit.SECONDS));
        assertEquals(List.of(true, false), answers);
        assertFalse(a.runsHere());
    }

    @Test
    void aDelayedTaskRunsOnTheLaneOrIsDroppedWhenTheLaneWasShutDownMeanwhile() throws Exception {
        Lane lane = new Lane("l", pool(1), timer);
        CountDownLatch ran = new CountDownLatch(1);
        lane.schedule(ran::countDown, 10, TimeUnit.MILLISECONDS);
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        AtomicBoolean late = new AtomicBoolean();
        lane.schedule(() -> late.set(true), 50, TimeUnit.MILLISECONDS);
        lane.shutdownNow();
        CountDownLatch timerPassed = new CountDownLatch(1);
        timer.schedule(timerPassed::countDown, 200, TimeUnit.MILLISECONDS);
        assertTrue(timerPassed.await(10, TimeUnit.SECONDS));
        assertFalse(late.get(), "a delayed task ran on a shut-down lane");
    }

    private static void await(CountDownLatch l) {
        try {
            l.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
