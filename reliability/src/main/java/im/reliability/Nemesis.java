package im.reliability;

import im.embedded.KafkaBrokerProcess;
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
import java.util.function.LongSupplier;

/**
 * Injects one fault at a time at random (seeded) times and heals it before the next. The kinds are
 * taken in rounds: each enabled kind once per round (as often as it is listed), in a random order,
 * so a short run still covers every kind. Each fault is down for a random 0.5–3 s before it is healed (frame drops:
 * 3.5–6 s). After each heal a probe message measures the time until the platform delivers again.
 */
public final class Nemesis implements Runnable {
    /** The faults the nemesis knows. */
    public enum Kind {
        /**
         * kill -9 of a Kafka node JVM, restart on the same port and data. On a cluster, in turn the
         * leader of a random events partition and the active controller.
         */
        BROKER_KILL,
        /** SIGQUIT to the (primary's) postmaster (pg_ctl -m immediate), restart with WAL recovery. */
        PG_CRASH,
        /** kill -9 of one of the two CDC relay processes (the active one or the standby), then a new one. */
        RELAY_KILL,
        /** kill -9 of one of the two delivery node processes (its partitions move to the other), then a new one. */
        DELIVERY_KILL,
        /** kill -9 of the sweeper process, then a new one (state from its changelogs). */
        SWEEPER_KILL,
        /** kill -9 of one gateway process (its sockets reset), a new one on the same port: clients reconnect. */
        GATEWAY_KILL,
        /**
         * One gateway is restarted with IM_FAULT rules that drop a burst of {@code sent} replies,
         * {@code acked} replies, event pushes and incoming acks, for the fault's window; then it is
         * restarted clean. Both restarts are graceful (SIGTERM), like a rolling deploy.
         */
        FRAME_DROP,
        /** One random device disconnects and connects again. */
        CLIENT_DISCONNECT,
        /** One random device's SDK is closed and opened again from its state directory (a restarted app process). */
        CLIENT_RESTART,
        /**
         * Membership churn of an online user through the directory: leave and rejoin, a back-to-back
         * leave+join, or a removal while the user sends into the conversation (shapes in turn).
         */
        MEMBERSHIP_CHURN,
        /**
         * One random device is reinstalled through the admin API; its old install stays connected
         * (the platform must close it) and the device then starts fresh as a new install.
         */
        DEVICE_REINSTALL,
        /** SIGSTOP of one gateway for longer than the interest lease (8–10 s), then SIGCONT: its sockets stay open. */
        GATEWAY_FREEZE,
        /** SIGSTOP of one CDC relay (the active one or the standby) for 8–10 s, then SIGCONT. */
        RELAY_FREEZE,
        /** SIGSTOP of one delivery node for 8–10 s, then SIGCONT. */
        DELIVERY_FREEZE,
        /**
         * Needs the standby pair: kill -9 of the primary's postmaster, the standby promoted after the
         * fault's down time; after the probe a new synchronous standby is rebuilt online from the new
         * primary on the old primary's port, so the next failover finds a pair again.
         */
        PG_FAILOVER,
        /** Needs the standby pair: the synchronous standby crashes for 2–4.5 s under load (commits wait), then restarts. */
        PG_STANDBY_OUTAGE;

        /** The kinds of the first campaign; the suite runs these until the fixes for the others land (see docs/reliability.md). */
        public static final List<Kind> CLASSIC = List.of(BROKER_KILL, PG_CRASH, RELAY_KILL, DELIVERY_KILL, SWEEPER_KILL,
                GATEWAY_KILL, FRAME_DROP, CLIENT_DISCONNECT);
        /** The kinds that need PostgreSQL as a primary + synchronous standby. */
        public static final List<Kind> PG_PAIR = List.of(PG_FAILOVER, PG_STANDBY_OUTAGE);

        /** Every kind the stack can run: without the standby pair, all but {@link #PG_PAIR}. */
        public static List<Kind> all(boolean pgStandby) {
            return java.util.Arrays.stream(values()).filter(k -> pgStandby || !PG_PAIR.contains(k)).toList();
        }
    }

    /** A freeze lasts longer than the gateway lease the campaign's stack runs with (3 s), and than the issue's "~8 s". */
    static final long FREEZE_MILLIS = 8_000;

    /**
     * One injected fault: when it started and when it was healed (epoch ms), and how long after the
     * heal a probe message was confirmed to its sender and delivered to its receiver (-1: not within 60 s).
     */
    record Fault(Kind kind, long startMillis, long healedMillis, String detail, long recoveryMillis) {}

    private final Stack stack;
    private final List<Kind> kinds;
    private final Random random;
    private final long intervalMillis;
    private final IntConsumer disconnectClient;
    private final IntConsumer restartClient;
    private final java.util.function.IntFunction<String> reinstall;
    private final java.util.function.IntFunction<String> churn;
    private int churnShape;
    private int brokerKills;
    private final LongSupplier probe;
    private final int clients;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final CountDownLatch stopLatch = new CountDownLatch(1);
    final List<Fault> faults = new CopyOnWriteArrayList<>();
    final List<String> errors = new CopyOnWriteArrayList<>();
    /** How long each standby rebuild after a PG_FAILOVER took (ms). */
    final List<Long> rebuildMillis = new CopyOnWriteArrayList<>();
    private Thread thread;

    /**
     * @param disconnectClient disconnects device {@code i}, waits and connects it again (blocking)
     * @param restartClient    closes device {@code i}'s SDK and opens a new one on its state directory (blocking)
     * @param reinstall        reinstalls device {@code i} (admin API) and starts its new install (blocking); returns what happened
     * @param churn            one membership churn of the given shape (blocking); returns what it did
     * @param probe            sends one message end to end after a heal; returns the ms it took to be
     *                         confirmed and delivered, or -1
     */
    Nemesis(Stack stack, List<Kind> kinds, long seed, long intervalMillis, int clients, IntConsumer disconnectClient,
            IntConsumer restartClient, java.util.function.IntFunction<String> reinstall,
            java.util.function.IntFunction<String> churn, LongSupplier probe) {
        this.restartClient = restartClient;
        this.reinstall = reinstall;
        this.churn = churn;
        this.stack = stack;
        this.kinds = List.copyOf(kinds);
        this.random = new Random(seed);
        this.intervalMillis = intervalMillis;
        this.clients = clients;
        this.disconnectClient = disconnectClient;
        this.probe = probe;
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

    /** True once every enabled kind was injected (and healed) as often as it is listed (a round's worth). */
    boolean coveredAll() {
        Map<Kind, Integer> done = counts();
        return kinds.stream().allMatch(k -> done.getOrDefault(k, 0) >= Collections.frequency(kinds, k));
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
            long healed = System.currentTimeMillis();
            long recovery = probe.getAsLong();
            if (k == Kind.PG_FAILOVER && !detail.isEmpty()) detail += restoreStandby();
            faults.add(new Fault(k, t0, healed, detail, recovery));
            System.out.printf("nemesis: %s %s down %d ms, healed after %d ms, probe delivered %d ms after the heal%n",
                    k, detail, down, healed - t0, recovery);
        }
    }

    /**
     * After a failover and its probe: a new synchronous standby (the next pair fault needs one),
     * then a second probe. Both are part of the fault's detail; a failed rebuild or a probe that
     * is not delivered is a nemesis error.
     */
    private String restoreStandby() {
        try {
            long ms = stack.pg.rebuildStandby();
            rebuildMillis.add(ms);
            long after = probe.getAsLong();
            if (after < 0) errors.add("PG_FAILOVER: no delivery within 60 s after the standby was rebuilt");
            return "; standby rebuilt online in " + ms + " ms, probe after it " + after + " ms";
        } catch (RuntimeException e) {
            errors.add("PG_FAILOVER rebuild: " + e);
            System.err.println("nemesis: rebuilding the standby failed: " + e);
            e.printStackTrace();
            return "; standby rebuild FAILED";
        }
    }

    /** Kills one of {@code replicas} at random, keeps it down, restarts it by its index; returns its name. */
    private String killOne(RoleProcess[] replicas, IntConsumer restart, long down) {
        int i = random.nextInt(replicas.length);
        String name = replicas[i].name;
        replicas[i].kill();
        pause(down);
        restart.accept(i);
        return name;
    }

    /** Injects and heals one fault; the heal runs even if the stop flag was raised meanwhile. */
    private String inject(Kind k, long down, int victim) {
        switch (k) {
            case BROKER_KILL -> {
                String role = "";
                int id = 1;
                if (stack.kafka.size() > 1) {
                    if (brokerKills++ % 2 == 0) {
                        int p = random.nextInt(Stack.PARTITIONS);
                        id = stack.kafka.leaderOf(stack.topics.events(), p);
                        role = " (leader of " + stack.topics.events() + "-" + p + ")";
                    } else {
                        id = stack.kafka.activeController();
                        role = " (active controller)";
                    }
                }
                KafkaBrokerProcess node = stack.kafka.node(id);
                node.kill();
                pause(down);
                node.restart();
                return "node " + id + role + ", pid " + node.pid();
            }
            case PG_CRASH -> {
                return stack.pg.crashPrimary(down);
            }
            case PG_FAILOVER -> {
                return stack.pg.failover(down, Stack.SLOT);
            }
            case PG_STANDBY_OUTAGE -> {
                return stack.pg.standbyOutage(1500 + down);
            }
            case RELAY_KILL -> {
                return killOne(stack.relays, stack::restartRelay, down);
            }
            case DELIVERY_KILL -> {
                return killOne(stack.nodes, stack::restartNode, down);
            }
            case SWEEPER_KILL -> {
                stack.sweeper.kill();
                pause(down);
                stack.restartSweeper();
                return "";
            }
            case GATEWAY_KILL -> {
                int i = random.nextInt(Stack.GATEWAYS);
                String name = stack.gateways[i].name;
                stack.stopGateway(i, false);
                pause(down);
                stack.restartGateway(i, "");
                return name;
            }
            case FRAME_DROP -> {
                int i = random.nextInt(Stack.GATEWAYS);
                String rules = "gw.reply.send:drop:" + random.nextInt(5) + ":" + (1 + random.nextInt(6))
                        + ",gw.reply.ack:drop:" + random.nextInt(10) + ":" + (1 + random.nextInt(8))
                        + ",gw.push:drop:" + random.nextInt(10) + ":" + (5 + random.nextInt(30))
                        + ",gw.ack:drop:" + random.nextInt(10) + ":" + (1 + random.nextInt(8));
                stack.stopGateway(i, true);
                stack.restartGateway(i, rules);
                pause(3000 + down);
                Map<String, Long> dropped = stack.gateways[i].dropped();
                stack.stopGateway(i, true);
                stack.restartGateway(i, "");
                return "gateway" + i + " " + rules + " dropped " + dropped;
            }
            case CLIENT_DISCONNECT -> {
                disconnectClient.accept(victim);
                return "device #" + victim;
            }
            case CLIENT_RESTART -> {
                restartClient.accept(victim);
                return "device #" + victim;
            }
            case DEVICE_REINSTALL -> {
                return reinstall.apply(victim);
            }
            case MEMBERSHIP_CHURN -> {
                return churn.apply(churnShape++);
            }
            case GATEWAY_FREEZE -> {
                return freeze(stack.gateways[random.nextInt(Stack.GATEWAYS)], down);
            }
            case RELAY_FREEZE -> {
                return freeze(stack.relays[random.nextInt(Stack.RELAYS)], down);
            }
            case DELIVERY_FREEZE -> {
                return freeze(stack.nodes[random.nextInt(Stack.NODES)], down);
            }
            default -> throw new IllegalStateException("unknown fault " + k);
        }
    }

    /** SIGSTOP, {@link #FREEZE_MILLIS} plus up to 2 s, SIGCONT (always, even if stopping). */
    private static String freeze(RoleProcess p, long down) {
        long ms = FREEZE_MILLIS + down % 2000;
        p.signal("STOP");
        try {
            pause(ms);
        } finally {
            p.signal("CONT");
        }
        return p.name + " frozen " + ms + " ms";
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
    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
