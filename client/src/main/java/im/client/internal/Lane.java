package im.client.internal;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client's serial executor on a pool that many clients may share: its tasks run one at a time,
 * in submission order, each seeing everything the previous one did (the queue hand-off is under
 * one lock), as on a thread of its own, but without one. The receive path, the listener callbacks
 * and the reconnect/resend scheduler of a client are lanes ({@link ClientThreads}).
 *
 * <p>A lane takes at most {@link #TURN} tasks per turn on a pool thread and then queues itself
 * behind the other lanes' turns, so one busy client does not hold a shared thread.
 */
final class Lane implements Executor {
    private static final Logger log = LoggerFactory.getLogger(Lane.class);
    static final int TURN = 64;

    private final String name;
    private final Executor pool;
    private final ScheduledExecutorService timer;
    private final Object lock = new Object();
    /** Guarded by lock, as are the fields below. */
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    /** A turn is submitted to the pool or running. */
    private boolean turnPending;
    private boolean shutdown;
    /** The thread running one of this lane's tasks now, or null. */
    private Thread runner;

    Lane(String name, Executor pool, ScheduledExecutorService timer) {
        this.name = name;
        this.pool = pool;
        this.timer = timer;
    }

    /** Queues {@code task}; @throws RejectedExecutionException after {@link #shutdown} or {@link #shutdownNow}. */
    @Override
    public void execute(Runnable task) {
        synchronized (lock) {
            if (shutdown) {
                throw new RejectedExecutionException(name + " is shut down");
            }
            tasks.add(task);
            if (turnPending) {
                return;
            }
            turnPending = true;
        }
        submitTurn();
    }

    /**
     * Queues {@code task} after {@code delay} (on the shared timer); dropped if the lane is shut down by then.
     *
     * @throws RejectedExecutionException if the lane is shut down already
     */
    ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
        synchronized (lock) {
            if (shutdown) {
                throw new RejectedExecutionException(name + " is shut down");
            }
        }
        return timer.schedule(() -> {
            try {
                execute(task);
            } catch (RejectedExecutionException e) {
                log.debug("{}: delayed task dropped, lane shut down", name);
            }
        }, delay, unit);
    }

    /** No new tasks; the queued ones still run. */
    void shutdown() {
        synchronized (lock) {
            shutdown = true;
            lock.notifyAll();
        }
    }

    /** No new tasks, the queued ones are dropped, and a task running now is interrupted (as a thread's shutdownNow does). */
    void shutdownNow() {
        synchronized (lock) {
            shutdown = true;
            tasks.clear();
            if (runner != null && runner != Thread.currentThread()) {
                runner.interrupt();
            }
            lock.notifyAll();
        }
    }

    /** True if the calling thread is running one of this lane's tasks. */
    boolean runsHere() {
        synchronized (lock) {
            return runner == Thread.currentThread();
        }
    }

    /**
     * After a shutdown: waits up to {@code millis} until no task of this lane runs or is queued;
     * false on timeout or interrupt. A turn still waiting for a pool thread is not waited for: it
     * finds nothing to run (so a lane task of another client may wait here, even on a one-thread pool).
     */
    boolean awaitStopped(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (lock) {
            while (!shutdown || runner != null || !tasks.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }
    }

    private void submitTurn() {
        try {
            pool.execute(this::turn);
        } catch (RejectedExecutionException e) {
            // The pool is gone (its runtime was closed): nothing of this lane can run any more.
            synchronized (lock) {
                log.debug("{}: pool shut down, {} task(s) dropped", name, tasks.size());
                tasks.clear();
                shutdown = true;
                turnPending = false;
                lock.notifyAll();
            }
        }
    }

    private void turn() {
        for (int i = 0; ; i++) {
            Runnable task;
            synchronized (lock) {
                task = tasks.poll();
                if (task == null) {
                    turnPending = false;
                    lock.notifyAll();
                    return;
                }
                if (i >= TURN && !shutdown) {
                    tasks.addFirst(task);
                    break; // more queued: yield the pool thread to other lanes, then continue
                }
                // (a shut-down lane drains in one turn: its pool may accept no new turn by now)
                runner = Thread.currentThread();
            }
            try {
                task.run();
            } catch (RuntimeException | Error e) {
                log.error("{}: task failed", name, e);
            } finally {
                synchronized (lock) {
                    runner = null;
                    lock.notifyAll();
                }
                Thread.interrupted(); // an interrupt meant for that task must not reach the next one on this thread
            }
        }
        submitTurn();
    }
}
