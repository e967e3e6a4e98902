package im.reliability;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.SentAck;
import im.store.directory.Directory;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The randomized fault campaign: starts the platform ({@link Stack}), creates users, devices and
 * conversations, connects one {@link ImClient} per device, sends at a target rate from every device
 * while a {@link Nemesis} injects faults, then stops the faults, lets the system quiesce, builds a
 * {@link History} and checks it with {@link Checker#check}.
 *
 * <p>Every send is recorded by its cmid: a sender {@code enqueue}s the message (durable outbox
 * entry, cmid known before anything goes on the wire) and then calls {@code resendPending()}. Its
 * outcome at the end: SENT if any {@code sent} for the cmid arrived (also late ones and those of
 * automatic resends, via {@link ClientListener#onSent}), PENDING if it is still in the outbox,
 * otherwise REJECTED (the SDK dropped it after a terminal error). What each device was told (event
 * pushes, synced pages, acked and subbed cursors, read states) is recorded by a {@link WireTap} per
 * device, per install epoch; {@code device_cursors} and {@code read_cursors} are read only as a
 * quiesce condition and once at the end. Senders also read now and then ({@code markRead}, seeded
 * like the sends), so the read-state rules have cursors moving on several devices of a user, and
 * edit or recall one of their recent confirmed messages ({@link ChangeDriver}), recorded as sends of
 * that kind.
 */
public final class Campaign {

    /**
     * @param seed              seeds every random choice (cast, timing, faults)
     * @param duration          how long senders and the nemesis run
     * @param users             number of users
     * @param devicesPerUser    devices of a multi-device user
     * @param multiDeviceUsers  how many users have {@code devicesPerUser} devices (the others have one)
     * @param groups            group conversations (3..6 random members)
     * @param directs           direct (1:1) conversations
     * @param sendsPerSecond    total send rate over all devices
     * @param faultInterval     mean time between faults (each 0.5..1.5 times this)
     * @param faults            enabled fault kinds (empty: no faults)
     * @param membershipChanges leave/join changes in groups during the run
     * @param offlineAtEnd      devices that go offline halfway through the run and stay away until the
     *                          first check is done; then they reconnect and must catch up (second check)
     * @param quiesceDeadline   how long the system may take to converge after the faults stop
     * @param workDir           PostgreSQL, Kafka and client state go here
     * @param kafkaNodes        Kafka KRaft nodes (1..9)
     * @param pgStandby         PostgreSQL as a primary + synchronous standby (needed by {@link Nemesis.Kind#PG_PAIR})
     */
    public record Options(long seed, Duration duration, int users, int devicesPerUser, int multiDeviceUsers,
                          int groups, int directs, double sendsPerSecond, Duration faultInterval,
                          List<Nemesis.Kind> faults, int membershipChanges, int offlineAtEnd, Duration quiesceDeadline,
                          Path workDir, int kafkaNodes, boolean pgStandby) {
        /** One Kafka node and one PostgreSQL, as the suite's first campaign runs it. */
        public Options(long seed, Duration duration, int users, int devicesPerUser, int multiDeviceUsers,
                       int groups, int directs, double sendsPerSecond, Duration faultInterval,
                       List<Nemesis.Kind> faults, int membershipChanges, int offlineAtEnd, Duration quiesceDeadline,
                       Path workDir) {
            this(seed, duration, users, devicesPerUser, multiDeviceUsers, groups, directs, sendsPerSecond, faultInterval,
                    faults, membershipChanges, offlineAtEnd, quiesceDeadline, workDir, 1, false);
        }

        public Options {
            if (kafkaNodes < 1 || kafkaNodes > 9) throw new IllegalArgumentException("kafkaNodes: 1..9");
            if (users < 2) throw new IllegalArgumentException("users: at least 2");
            if (devicesPerUser < 1) throw new IllegalArgumentException("devicesPerUser: at least 1");
            if (groups + directs < 1) throw new IllegalArgumentException("at least one conversation");
            if (sendsPerSecond <= 0) throw new IllegalArgumentException("sendsPerSecond: positive");
            if (offlineAtEnd < 0 || offlineAtEnd >= users) throw new IllegalArgumentException("offlineAtEnd: 0 .. users-1");
            if (!pgStandby) {
                for (Nemesis.Kind k : faults) {
                    if (Nemesis.Kind.PG_PAIR.contains(k)) throw new IllegalArgumentException(k + " needs pgStandby (--pg-standby)");
                }
            }
            faults = List.copyOf(faults);
        }
    }

    /** What a run produced: the checker's verdict, the campaign's own figures and the history it checked. */
    public record Result(CheckReport report, Map<String, Long> figures, History history, List<Nemesis.Fault> faults) {
        public boolean ok() {
            return report.ok();
        }
    }
    private final Options o;
    private final Random random;
    private final List<CastDevice> devices = new ArrayList<>();
    private final List<String> convs = new ArrayList<>();
    private final AtomicBoolean stopSenders = new AtomicBoolean();
    private final AtomicLong sendErrors = new AtomicLong();
    private final AtomicLong reads = new AtomicLong();
    private final AtomicLong readErrors = new AtomicLong();
    private final ChangeDriver changes = new ChangeDriver();
    private final List<String> problems = new CopyOnWriteArrayList<>();
    private Stack stack;
    private Directory directory;
    private MembershipDriver membership;
    private DeviceDriver driver;
    private Observer observer;
    private CastDevice probeSender;
    private CastDevice probeReceiver;

    private Campaign(Options o) {
        this.o = o;
        this.random = new Random(o.seed());
    }

    public static Result run(Options o) throws Exception {
        return new Campaign(o).execute();
    }

    static void log(String fmt, Object... args) {
        System.out.printf("campaign: " + fmt + "%n", args);
    }

    private Result execute() throws Exception {
        long tStart = System.currentTimeMillis();
        log("seed %d, %d s, %d users, %d conversations, %.1f sends/s, faults %s every ~%d ms, %d Kafka node(s), PostgreSQL %s",
                o.seed(), o.duration().toSeconds(), o.users(), o.groups() + o.directs(), o.sendsPerSecond(), o.faults(),
                o.faultInterval().toMillis(), o.kafkaNodes(), o.pgStandby() ? "primary + synchronous standby" : "one server");
        stack = new Stack(o.workDir(), o.kafkaNodes(), o.pgStandby());
        try {
            log("stack up in %d ms (gateways %s, %s)", System.currentTimeMillis() - tStart, stack.ws(0), stack.ws(1));
            directory = new Directory(stack.db.dataSource(), Clock.systemUTC());
            AdminHttp admin = new AdminHttp(stack.adminPorts);
            StackDb db = new StackDb(stack.db.dataSource());
            membership = new MembershipDriver(admin, db);
            driver = new DeviceDriver(devices, convs, stack.gatewayPorts, admin, problems);
            observer = new Observer(devices, convs, db, membership, stack.kafka.bootstrapServers(), stack.topics.events(), problems);
            Cast cast = Cast.create(directory, o, random, membership, devices, convs);
            probeSender = cast.probeSender();
            probeReceiver = cast.probeReceiver();
            for (CastDevice d : devices) driver.openClient(d);

            int faultable = (int) devices.stream().filter(d -> !d.probe).count();
            Nemesis nemesis = new Nemesis(stack, o.faults(), random.nextLong(), o.faultInterval().toMillis(), faultable,
                    driver::bounceClient, driver::restartClient, driver::reinstall, membership::churnOnce, this::probe);
            List<Thread> senders = new ArrayList<>();
            long senderCount = devices.stream().filter(d -> !membership.memberOf.get(d.user).isEmpty()).count();
            double perDevice = o.sendsPerSecond() / Math.max(1, senderCount);
            long runStart = System.currentTimeMillis();
            long runEnd = runStart + o.duration().toMillis();
            for (CastDevice d : devices) {
                long seed = random.nextLong();
                Thread t = daemon("sender-" + d.id, () -> sendLoop(d, perDevice, new Random(seed)));
                senders.add(t);
                t.start();
            }
            long churnSeed = random.nextLong();
            Thread churn = daemon("membership-churn",
                    () -> membership.churn(o.membershipChanges(), runStart, runEnd, new Random(churnSeed), stopSenders::get));
            churn.start();
            List<CastDevice> parked = new ArrayList<>();
            for (CastDevice d : devices) {
                if (parked.size() < o.offlineAtEnd() && !d.probe) parked.add(d);
            }
            Thread parker = daemon("park-offline", () -> {
                LockSupport.parkNanos((runEnd - runStart) / 2 * 1_000_000L);
                for (CastDevice d : parked) {
                    d.parked = true;
                    d.client.disconnect();
                    log("device %s is offline from now until after the first check", d.id);
                }
            });
            parker.start();
            nemesis.start();
            // The run lasts its duration and, so that a short run still tries every enabled kind, until
            // each was injected once. That takes one nemesis cycle per kind (wait up to 1.5 intervals,
            // fault, heal, probe: ~10 s on a quiet 2-core machine, several times that on a loaded one),
            // so the cap, which only stops a stuck nemesis, scales with the kinds: 1.5 intervals + 20 s each.
            long perKind = (long) (1.5 * o.faultInterval().toMillis()) + 20_000;
            long hardEnd = runStart + Math.max(5 * o.duration().toMillis(), o.faults().size() * perKind);
            while (System.currentTimeMillis() < runEnd
                    || (!nemesis.coveredAll() && System.currentTimeMillis() < hardEnd)) {
                LockSupport.parkNanos(100_000_000L);
            }
            stopSenders.set(true);
            for (Thread t : senders) t.join(120_000);
            churn.join(60_000);
            parker.join(60_000);
            nemesis.stopAndHeal();
            log("run over after %d ms; %d faults: %s", System.currentTimeMillis() - runStart, nemesis.faults.size(), nemesis.counts());

            long quiesceStart = System.currentTimeMillis();
            long convergeMs = quiesce();

            History h = observer.buildHistory();
            Map<String, Long> figures = new LinkedHashMap<>();
            figures.put("sends", (long) h.sends().size());
            for (History.Outcome out : History.Outcome.values()) {
                figures.put("sends." + out.name().toLowerCase(), h.sends().stream().filter(s -> s.outcome() == out).count());
            }
            figures.put("send_calls_failed", sendErrors.get());
            figures.put("reads", reads.get());
            figures.put("reads_failed", readErrors.get());
            changes.figures().forEach((k, v) -> figures.put("changes." + k, v));
            figures.put("devices", (long) devices.size());
            figures.put("conversations", (long) convs.size());
            figures.put("membership_changes", membership.done.get());
            figures.put("events_committed", h.committed().values().stream().mapToLong(List::size).sum());
            figures.put("topic_records", (long) h.topic().size());
            figures.put("faults", (long) nemesis.faults.size());
            nemesis.counts().forEach((k, v) -> figures.put("faults." + k.name().toLowerCase(), (long) v));
            stack.droppedFrames().forEach((k, v) -> figures.put("frames_dropped." + k, v));
            for (Nemesis.Kind k : Nemesis.Kind.values()) {
                List<Long> rec = nemesis.faults.stream().filter(f -> f.kind() == k).map(Nemesis.Fault::recoveryMillis).sorted().toList();
                if (rec.isEmpty()) continue;
                String key = "recovery_ms." + k.name().toLowerCase();
                figures.put(key + ".max", rec.contains(-1L) ? -1L : rec.get(rec.size() - 1));
                figures.put(key + ".median", rec.get(rec.size() / 2));
            }
            List<Long> rebuilds = nemesis.rebuildMillis.stream().sorted().toList();
            if (!rebuilds.isEmpty()) {
                figures.put("pg_standby_rebuild_ms.median", rebuilds.get(rebuilds.size() / 2));
                figures.put("pg_standby_rebuild_ms.max", rebuilds.get(rebuilds.size() - 1));
            }
            figures.put("nemesis_errors", (long) nemesis.errors.size());
            for (CastDevice d : devices) d.tap.problems.forEach(problems::add);
            figures.put("harness_problems", (long) problems.size());
            figures.put("reinstalled_installs_still_open_after_3s", driver.staleStillOpen.get());
            figures.put("converge_ms", convergeMs);
            long lastHeal = nemesis.faults.stream().mapToLong(Nemesis.Fault::healedMillis).max().orElse(quiesceStart);
            figures.put("last_heal_to_converged_ms", quiesceStart + convergeMs - lastHeal);

            figures.put("devices_offline_at_check", (long) parked.size());
            CheckReport report = Checker.check(h);
            report.figures().forEach((k, v) -> figures.put("check." + k, v));
            if (report.ok() && !parked.isEmpty()) {
                // The offline devices come back: they must catch up like everyone else.
                for (CastDevice d : parked) {
                    d.parked = false;
                    driver.connectWithRetry(d, 60_000);
                }
                long catchUp = quiesce();
                figures.put("offline_catch_up_ms", catchUp);
                History h2 = observer.buildHistory();
                CheckReport second = Checker.check(h2);
                second.figures().forEach((k, v) -> figures.put("check2." + k, v));
                if (!second.ok()) {
                    log("second check (after the offline devices returned) FAILED");
                    report = second;
                }
                h = h2;
            }
            figures.put("violations", (long) report.violations().size());
            figures.put("total_ms", System.currentTimeMillis() - tStart);
            log("figures:");
            figures.forEach((k, v) -> System.out.printf("  %-28s %d%n", k, v));
            for (String p : problems) log("problem: %s", p);
            for (String e : nemesis.errors) log("nemesis error: %s", e);
            if (report.ok()) {
                log("OK: no violations");
            } else {
                log("%d VIOLATIONS:", report.violations().size());
                for (Violation v : report.violations()) System.out.printf("  %s %s%n", v.kind(), v.detail());
            }
            return new Result(report, figures, h, List.copyOf(nemesis.faults));
        } finally {
            for (CastDevice d : devices) {
                if (d.client != null) d.client.close();
                if (d.tap != null) d.tap.close();
            }
            stack.close();
        }
    }

    private Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.setUncaughtExceptionHandler((th, e) -> {
            problems.add(th.getName() + " died: " + e);
            e.printStackTrace();
        });
        return t;
    }

    // ------------------------------------------------------------------ the cast


    /**
     * One probe message after a heal: the time until its {@code sent} arrived (resent as the SDK
     * does while the platform is still recovering) and the receiver on the other gateway stored
     * and acknowledged it. -1 if that took more than 60 s.
     */
    private long probe() {
        long t0 = System.currentTimeMillis();
        long deadline = t0 + 60_000;
        try {
            String cmid = probeSender.client.enqueue(Cast.PROBE_CONV, "probe at " + t0);
            probeSender.attempts.add(new CastDevice.Attempt(cmid, Cast.PROBE_CONV, "probe at " + t0, probeSender.epoch));
            Long seq;
            while ((seq = probeSender.acked.get(cmid)) == null) {
                if (System.currentTimeMillis() > deadline) return -1;
                try {
                    for (SentAck a : probeSender.client.resendPending()) probeSender.acked.put(a.cmid(), a.seq());
                } catch (IOException e) {
                    LockSupport.parkNanos(50_000_000L);   // not connected yet: the SDK reconnects
                }
            }
            while (probeReceiver.client.cursor(Cast.PROBE_CONV) < seq) {
                if (System.currentTimeMillis() > deadline) return -1;
                LockSupport.parkNanos(10_000_000L);
            }
            return System.currentTimeMillis() - t0;
        } catch (IOException e) {
            problems.add("probe failed: " + e);
            return -1;
        }
    }

    // ------------------------------------------------------------------ load

    private void sendLoop(CastDevice d, double perSecond, Random r) {
        long k = 0;
        long next = System.currentTimeMillis();
        if (d.probe) return;
        while (!stopSenders.get()) {
            // Poisson arrivals at the device's share of the rate.
            next += (long) (-Math.log(1 - r.nextDouble()) * 1000.0 / perSecond);
            long now = System.currentTimeMillis();
            if (next > now) LockSupport.parkNanos((next - now) * 1_000_000L);
            else next = now;   // behind (an outage): no burst to catch up
            if (stopSenders.get()) return;
            if (r.nextDouble() < ChangeDriver.CHANGE_CHANCE && changes.changeOne(d, membership.memberOf.get(d.user), r, k++)) continue;
            List<String> mine = new ArrayList<>(membership.memberOf.get(d.user));
            if (mine.isEmpty()) continue;
            java.util.Collections.sort(mine);
            String conv = mine.get(r.nextInt(mine.size()));
            String body = d.id + " #" + k++;
            String cmid;
            try {
                cmid = d.client.enqueue(conv, body);
            } catch (IOException e) {
                problems.add(d.id + " enqueue failed: " + e);
                continue;
            }
            d.attempts.add(new CastDevice.Attempt(cmid, conv, body, d.epoch));
            try {
                for (SentAck a : d.client.resendPending()) d.acked.put(a.cmid(), a.seq());
            } catch (IOException e) {
                sendErrors.incrementAndGet();   // not connected: stays in the outbox
            }
            if (r.nextDouble() < READ_CHANCE) markRead(d, mine.get(r.nextInt(mine.size())), r);
        }
    }

    /** How often a sender also reads: after this share of its sends it marks a conversation read. */
    private static final double READ_CHANCE = 0.3;

    /**
     * The user read a conversation on this device: mostly up to what the device holds, sometimes a
     * lower seq (which must leave the user's cursor where it is). The answer is not awaited; what the
     * server said is on the wire tap, and a refused or lost read is only counted.
     */
    private void markRead(CastDevice d, String conv, Random r) {
        long cursor = d.client.cursor(conv);
        long seq = r.nextBoolean() ? cursor : (long) (r.nextDouble() * (cursor + 1));
        reads.incrementAndGet();
        d.client.markRead(conv, seq).whenComplete((s, e) -> {
            if (e != null) readErrors.incrementAndGet();
        });
    }

    // ------------------------------------------------------------------ quiesce

    /** Resends outboxes and waits until every device's cursors (local and server) are at the head of its conversations. */
    private long quiesce() {
        long t0 = System.currentTimeMillis();
        long deadline = t0 + o.quiesceDeadline().toMillis();
        String lag = "";
        while (System.currentTimeMillis() < deadline) {
            for (CastDevice d : devices) {
                if (d.parked) continue;
                // No reconnect here: a device that lost its connection reconnects by itself (the SDK) or
                // not at all; convergence must come from the system, not from the harness.
                if (!d.client.pending().isEmpty() && d.client.isConnected()) {
                    try {
                        for (SentAck a : d.client.resendPending()) d.acked.put(a.cmid(), a.seq());
                    } catch (IOException e) {
                        // retried next round
                    }
                }
            }
            lag = observer.lagging();
            if (lag.isEmpty()) {
                long ms = System.currentTimeMillis() - t0;
                log("quiesced in %d ms", ms);
                return ms;
            }
            LockSupport.parkNanos(200_000_000L);
        }
        log("NOT quiesced within %d ms: %s", o.quiesceDeadline().toMillis(), lag);
        return System.currentTimeMillis() - t0;
    }
}
