package im.reliability;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

/**
 * Injects one fault at a time at random (seeded) times and heals it before the next. The kinds are
 * taken in rounds: each enabled kind once per round, in a random order, so a short run still
 * covers every kind. Each fault is down for a random 0.5–3 s before it is healed.
 */
public final class Nemesis implements Runnable {
    /** The faults the nemesis knows. */
    public enum Kind {
        /** kill -9 of the Kafka broker JVM, restart on the same port and data. */
        BROKER_KILL,
        /** SIGQUIT to the postmaster (pg_ctl -m immediate), restart with WAL recovery. */
        PG_CRASH,
        /** CDC relay closed, a new one started (it resumes from its slot). */
        RELAY_RESTART,
        /** Delivery node closed, a new one started (fresh state dir, state from changelogs). */
        DELIVERY_RESTART,
        /** Sweeper closed, a new one started. */
        SWEEPER_RESTART,
        /** Gateway closed (every socket drops), a new one on the same port: clients reconnect. */
        GATEWAY_RESTART,
        /** One random device disconnects and connects again. */
        CLIENT_DISCONNECT
    }

    /** One injected fault: when it started and when it was healed (epoch ms). */
    record Fault(Kind kind, long startMillis, long healedMillis, String detail) {}

    private final Stack stack;
    private final List<Kind> kinds;
    private final Random random;
    private final long intervalMillis;
    private final IntConsumer disconnectClient;
    private final int clients;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final CountDownLatch stopLatch = new CountDownLatch(1);
    final List<Fault> faults = new CopyOnWriteArrayList<>();
    final List<String> errors = new CopyOnWriteArrayList<>();
    private Thread thread;

    /**
     * @param disconnectClient disconnects device {@code i}, waits and connects it again (blocking)
     */
    Nemesis(Stack stack, List<Kind> kinds, long seed, long intervalMillis, int clients, IntConsumer disconnectClient) {
        this.stack = stack;
        this.kinds = List.copyOf(kinds);
        this.random = new Random(seed);
        this.intervalMillis = intervalMillis;
        this.clients = clients;
        this.disconnectClient = disconnectClient;
    }

    void start() {
        thread = new Thread(this, "nemesis");
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops injecting; returns once the fault in progress (if any) is healed. */
    void stopAndHeal() throws InterruptedException {
        stop.set(true);
        stopLatch.countDown();
        if (thread != null) {
            thread.join(300_000);
        }
    }

    /** True once every enabled kind was injected (and healed) at least once. */
    boolean coveredAll() {
        return counts().keySet().containsAll(kinds);
    }

    Map<Kind, Integer> counts() {
        Map<Kind, Integer> m = new EnumMap<>(Kind.class);
        for (Fault f : faults) m.merge(f.kind(), 1, Integer::sum);
        return m;
    }

    @Override
    public void run() {
        List<Kind> round = new ArrayList<>();
        while (!stop.get()) {
            long wait = (long) (intervalMillis * (0.5 + random.nextDouble()));
            if (!sleep(wait)) return;
            if (kinds.isEmpty()) continue;
            if (round.isEmpty()) {
                round.addAll(kinds);
                Collections.shuffle(round, random);
            }
            Kind k = round.remove(0);
            long down = 500 + random.nextInt(2500);
            int victim = random.nextInt(Math.max(1, clients));
            long t0 = System.currentTimeMillis();
            String detail = "";
            try {
                detail = inject(k, down, victim);
            } catch (RuntimeException e) {
                errors.add(k + ": " + e);
                System.err.println("nemesis: " + k + " failed: " + e);
                e.printStackTrace();
            }
            faults.add(new Fault(k, t0, System.currentTimeMillis(), detail));
            System.out.printf("nemesis: %s %s down %d ms, healed after %d ms%n", k, detail, down, System.currentTimeMillis() - t0);
        }
    }

    /** Injects and heals one fault; the heal runs even if the stop flag was raised meanwhile. */
    private String inject(Kind k, long down, int victim) {
        switch (k) {
            case BROKER_KILL -> {
                stack.broker.kill();
                pause(down);
                stack.broker.restart();
                return "pid " + stack.broker.pid();
            }
            case PG_CRASH -> {
                stack.pg.crashImmediately();
                pause(down);
                stack.pg.restartAfterCrash();
                return "";
            }
            case RELAY_RESTART -> {
                stack.relay.close();
                pause(down);
                stack.startRelay();
                return "";
            }
            case DELIVERY_RESTART -> {
                stack.node.close();
                pause(down);
                stack.startNode();
                return "";
            }
            case SWEEPER_RESTART -> {
                stack.sweeper.close();
                pause(down);
                stack.startSweeper();
                return "";
            }
            case GATEWAY_RESTART -> {
                stack.gateway.close();
                pause(down);
                stack.startGateway();
                return stack.gateway.id();
            }
            case CLIENT_DISCONNECT -> {
                disconnectClient.accept(victim);
                return "device #" + victim;
            }
            default -> throw new IllegalStateException("unknown fault " + k);
        }
    }

    /** Waits between faults; returns false once a stop was requested. */
    private boolean sleep(long millis) {
        try {
            return !stopLatch.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The down time of a fault (never cut short: the heal always follows). */
    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
