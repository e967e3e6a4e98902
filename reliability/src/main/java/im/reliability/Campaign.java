package im.reliability;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.ClientListener;
import im.client.ClientOptions;
import im.client.ImClient;
import im.client.PendingSend;
import im.client.ReceivedEvent;
import im.client.SentAck;
import im.protocol.Acked;
import im.protocol.ConvState;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
import im.protocol.Subbed;
import im.protocol.Synced;
import im.ingest.directory.Directory;
import im.topics.EventRecord;
import im.topics.MalformedRecordException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

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
 * pushes, synced pages, acked and subbed cursors) is recorded by a {@link WireTap} per device, per
 * install epoch; {@code device_cursors} is read only as a quiesce condition and once at the end.
 */
public final class Campaign {
    private static final ObjectMapper JSON = new ObjectMapper();

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
     */
    public record Options(long seed, Duration duration, int users, int devicesPerUser, int multiDeviceUsers,
                          int groups, int directs, double sendsPerSecond, Duration faultInterval,
                          List<Nemesis.Kind> faults, int membershipChanges, int offlineAtEnd, Duration quiesceDeadline,
                          Path workDir) {
        public Options {
            if (users < 2) throw new IllegalArgumentException("users: at least 2");
            if (devicesPerUser < 1) throw new IllegalArgumentException("devicesPerUser: at least 1");
            if (groups + directs < 1) throw new IllegalArgumentException("at least one conversation");
            if (sendsPerSecond <= 0) throw new IllegalArgumentException("sendsPerSecond: positive");
            if (offlineAtEnd < 0 || offlineAtEnd >= users) throw new IllegalArgumentException("offlineAtEnd: 0 .. users-1");
            faults = List.copyOf(faults);
        }
    }

    /** What a run produced: the checker's verdict, the campaign's own figures and the history it checked. */
    public record Result(CheckReport report, Map<String, Long> figures, History history, List<Nemesis.Fault> faults) {
        public boolean ok() {
            return report.ok();
        }
    }

    private record Attempt(String cmid, String conv, String body, int epoch) {}

    /** What one install of a device was told and stored; for a replaced install also its state when it was closed. */
    private static final class Rec {
        final List<History.Seen> seen = new CopyOnWriteArrayList<>();
        final List<History.CommittedEvent> storedEvents = new CopyOnWriteArrayList<>();
        final List<History.CursorReport> cursorReports = new CopyOnWriteArrayList<>();
        volatile long retiredAt;
        volatile Map<String, List<Long>> stored = Map.of();
        volatile Map<String, Long> local = Map.of();
        volatile Set<String> pending = Set.of();
    }

    /** One device: its client, what it attempted and every ack it saw. */
    private static final class Dev {
        final int index;
        final String id;
        final String user;
        volatile String token;
        volatile Path stateDir;
        /** A probe device: sends only the nemesis' probe messages, never faulted. */
        boolean probe;
        /** Parked offline (see {@link Options#offlineAtEnd}): nobody reconnects it until the first check is done. */
        volatile boolean parked;
        volatile ImClient client;
        final ConcurrentLinkedQueue<Attempt> attempts = new ConcurrentLinkedQueue<>();
        /** cmid -> the seq of its first {@code sent} (what the sender waits for). */
        final Map<String, Long> acked = new ConcurrentHashMap<>();
        /** cmid -> every {@code sent} reply, in arrival order. */
        final Map<String, List<History.SentReply>> replies = new ConcurrentHashMap<>();
        /** Per install epoch: recorded by the wire tap and the SDK's onEvent, for the checker. */
        final Map<Integer, Rec> recs = new ConcurrentHashMap<>();
        volatile int epoch = 1;

        Rec rec(int epoch) {
            return recs.computeIfAbsent(epoch, k -> new Rec());
        }
        WireTap tap;

        Dev(int index, String id, String user, String token, Path stateDir) {
            this.index = index;
            this.id = id;
            this.user = user;
            this.token = token;
            this.stateDir = stateDir;
        }
    }

    private final Options o;
    private final Random random;
    private final List<Dev> devices = new ArrayList<>();
    private final List<String> convs = new ArrayList<>();
    private final Set<String> groupConvs = new LinkedHashSet<>();
    /** user -> conversations it is currently a member of (as far as the campaign knows). */
    private final Map<String, Set<String>> memberOf = new ConcurrentHashMap<>();
    /** Every membership change the campaign made, with the seq it was answered. */
    private final List<History.MembershipOp> membershipOps = new CopyOnWriteArrayList<>();
    /** The admin API client (membership changes, reinstalls). */
    private final java.net.http.HttpClient admin = java.net.http.HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(2)).build();
    private final AtomicBoolean stopSenders = new AtomicBoolean();
    private final AtomicLong sendErrors = new AtomicLong();
    private final AtomicLong membershipDone = new AtomicLong();
    private final List<String> problems = new CopyOnWriteArrayList<>();
    private Stack stack;
    private Directory directory;
    private Dev probeSender;
    private Dev probeReceiver;
    private static final String PROBE_CONV = "probe";

    private Campaign(Options o) {
        this.o = o;
        this.random = new Random(o.seed());
    }

    public static Result run(Options o) throws Exception {
        return new Campaign(o).execute();
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("campaign: " + fmt + "%n", args);
    }

    private Result execute() throws Exception {
        long tStart = System.currentTimeMillis();
        log("seed %d, %d s, %d users, %d conversations, %.1f sends/s, faults %s every ~%d ms",
                o.seed(), o.duration().toSeconds(), o.users(), o.groups() + o.directs(), o.sendsPerSecond(), o.faults(),
                o.faultInterval().toMillis());
        stack = new Stack(o.workDir());
        try {
            log("stack up in %d ms (gateways %s, %s)", System.currentTimeMillis() - tStart, stack.ws(0), stack.ws(1));
            directory = new Directory(stack.db.dataSource(), Clock.systemUTC());
            createCast();
            for (Dev d : devices) openClient(d);

            int faultable = (int) devices.stream().filter(d -> !d.probe).count();
            Nemesis nemesis = new Nemesis(stack, o.faults(), random.nextLong(), o.faultInterval().toMillis(), faultable,
                    this::bounceClient, this::restartClient, this::reinstall, this::churnOnce, this::probe);
            List<Thread> senders = new ArrayList<>();
            long senderCount = devices.stream().filter(d -> !memberOf.get(d.user).isEmpty()).count();
            double perDevice = o.sendsPerSecond() / Math.max(1, senderCount);
            long runStart = System.currentTimeMillis();
            long runEnd = runStart + o.duration().toMillis();
            for (Dev d : devices) {
                long seed = random.nextLong();
                Thread t = daemon("sender-" + d.id, () -> sendLoop(d, perDevice, new Random(seed)));
                senders.add(t);
                t.start();
            }
            Thread churn = daemon("membership-churn", () -> churn(runStart, runEnd, new Random(random.nextLong())));
            churn.start();
            List<Dev> parked = new ArrayList<>();
            for (Dev d : devices) {
                if (parked.size() < o.offlineAtEnd() && !d.probe) parked.add(d);
            }
            Thread parker = daemon("park-offline", () -> {
                LockSupport.parkNanos((runEnd - runStart) / 2 * 1_000_000L);
                for (Dev d : parked) {
                    d.parked = true;
                    d.client.disconnect();
                    log("device %s is offline from now until after the first check", d.id);
                }
            });
            parker.start();
            nemesis.start();
            // The run lasts its duration and, so that a short run still tries every enabled kind, until
            // each was injected once (at most five times the duration).
            long hardEnd = runStart + 5 * o.duration().toMillis();
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

            History h = buildHistory();
            Map<String, Long> figures = new LinkedHashMap<>();
            figures.put("sends", (long) h.sends().size());
            for (History.Outcome out : History.Outcome.values()) {
                figures.put("sends." + out.name().toLowerCase(), h.sends().stream().filter(s -> s.outcome() == out).count());
            }
            figures.put("send_calls_failed", sendErrors.get());
            figures.put("devices", (long) devices.size());
            figures.put("conversations", (long) convs.size());
            figures.put("membership_changes", membershipDone.get());
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
            figures.put("nemesis_errors", (long) nemesis.errors.size());
            for (Dev d : devices) d.tap.problems.forEach(problems::add);
            figures.put("harness_problems", (long) problems.size());
            figures.put("reinstalled_installs_still_open_after_3s", staleStillOpen.get());
            figures.put("converge_ms", convergeMs);
            long lastHeal = nemesis.faults.stream().mapToLong(Nemesis.Fault::healedMillis).max().orElse(quiesceStart);
            figures.put("last_heal_to_converged_ms", quiesceStart + convergeMs - lastHeal);

            figures.put("devices_offline_at_check", (long) parked.size());
            CheckReport report = Checker.check(h);
            report.figures().forEach((k, v) -> figures.put("check." + k, v));
            if (report.ok() && !parked.isEmpty()) {
                // The offline devices come back: they must catch up like everyone else.
                for (Dev d : parked) {
                    d.parked = false;
                    connectWithRetry(d, 60_000);
                }
                long catchUp = quiesce();
                figures.put("offline_catch_up_ms", catchUp);
                History h2 = buildHistory();
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
            for (Dev d : devices) {
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

    private void createCast() throws IOException {
        for (String u : List.of("u-probe-s", "u-probe-r")) directory.createUser(u, "probe");
        List<String> users = new ArrayList<>();
        for (int i = 0; i < o.users(); i++) {
            String u = String.format("u%02d", i);
            directory.createUser(u, "user " + i);
            users.add(u);
            memberOf.put(u, ConcurrentHashMap.newKeySet());
        }
        for (int i = 0; i < o.users(); i++) {
            int n = i < o.multiDeviceUsers() ? o.devicesPerUser() : 1;
            for (int k = 0; k < n; k++) {
                String id = "d-" + users.get(i) + "-" + k;
                String token = directory.registerDevice(users.get(i), id).token();
                devices.add(new Dev(devices.size(), id, users.get(i), token, o.workDir().resolve("clients").resolve(id)));
            }
        }
        Map<String, List<String>> members = new LinkedHashMap<>();
        members.put(PROBE_CONV, List.of("u-probe-s", "u-probe-r"));
        for (int g = 0; g < o.groups(); g++) {
            List<String> shuffled = new ArrayList<>(users);
            java.util.Collections.shuffle(shuffled, random);
            int size = Math.min(users.size(), 3 + random.nextInt(4));
            members.put("g" + g, new ArrayList<>(shuffled.subList(0, size)));
        }
        Set<String> pairs = new HashSet<>();
        for (int c = 0; c < o.directs(); c++) {
            for (int tries = 0; tries < 100; tries++) {
                int a = random.nextInt(users.size());
                int b = random.nextInt(users.size());
                if (a == b || !pairs.add(Math.min(a, b) + "-" + Math.max(a, b))) continue;
                members.put("c" + c, List.of(users.get(a), users.get(b)));
                break;
            }
        }
        // Everyone sends somewhere: a user in no conversation joins a random group.
        for (String u : users) {
            boolean in = members.values().stream().anyMatch(l -> l.contains(u));
            if (!in && o.groups() > 0) members.get("g" + random.nextInt(o.groups())).add(u);
        }
        for (Map.Entry<String, List<String>> e : members.entrySet()) {
            boolean group = e.getKey().startsWith("g");
            if (e.getKey().equals(PROBE_CONV)) {
                directory.createConversation(PROBE_CONV, "direct", e.getValue());
                convs.add(PROBE_CONV);
                continue;
            }
            directory.createConversation(e.getKey(), group ? "group" : "direct", e.getValue());
            convs.add(e.getKey());
            if (group) groupConvs.add(e.getKey());
            for (String u : e.getValue()) memberOf.get(u).add(e.getKey());
            log("conversation %s: %s", e.getKey(), e.getValue());
        }
        // The probe pair: after every heal the nemesis measures one message end to end (sender on
        // gateway 0, receiver on gateway 1).
        probeSender = probeDevice("u-probe-s", "d-probe-s");
        probeReceiver = probeDevice("u-probe-r", "d-probe-r");
    }

    private Dev probeDevice(String user, String id) {
        memberOf.put(user, ConcurrentHashMap.newKeySet());
        memberOf.get(user).add(PROBE_CONV);
        Dev d = new Dev(devices.size(), id, user, directory.registerDevice(user, id).token(),
                o.workDir().resolve("clients").resolve(id));
        d.probe = true;
        devices.add(d);
        return d;
    }

    /**
     * One probe message after a heal: the time until its {@code sent} arrived (resent as the SDK
     * does while the platform is still recovering) and the receiver on the other gateway stored
     * and acknowledged it. -1 if that took more than 60 s.
     */
    private long probe() {
        long t0 = System.currentTimeMillis();
        long deadline = t0 + 60_000;
        try {
            String cmid = probeSender.client.enqueue(PROBE_CONV, "probe at " + t0);
            probeSender.attempts.add(new Attempt(cmid, PROBE_CONV, "probe at " + t0, probeSender.epoch));
            Long seq;
            while ((seq = probeSender.acked.get(cmid)) == null) {
                if (System.currentTimeMillis() > deadline) return -1;
                try {
                    for (SentAck a : probeSender.client.resendPending()) probeSender.acked.put(a.cmid(), a.seq());
                } catch (IOException e) {
                    LockSupport.parkNanos(50_000_000L);   // not connected yet: the SDK reconnects
                }
            }
            while (probeReceiver.client.cursor(PROBE_CONV) < seq) {
                if (System.currentTimeMillis() > deadline) return -1;
                LockSupport.parkNanos(10_000_000L);
            }
            return System.currentTimeMillis() - t0;
        } catch (IOException e) {
            problems.add("probe failed: " + e);
            return -1;
        }
    }

    private void openClient(Dev d) throws IOException {
        int gw = d == probeSender ? 0 : d == probeReceiver ? 1 : d.index % Stack.GATEWAYS;
        d.tap = new WireTap(d.id, new java.net.InetSocketAddress("127.0.0.1", stack.gatewayPorts[gw]),
                (epoch, f, at) -> record(d, epoch, f, at));
        startClient(d);
    }

    /** A new SDK instance on the device's state directory (as a restarted process), connected. */
    private void startClient(Dev d) throws IOException {
        ImClient c = ImClient.open(ClientOptions.of(d.tap.uri(), d.token, d.stateDir));
        Rec rec = d.rec(d.epoch);
        c.addListener(new ClientListener() {
            @Override
            public void onSent(SentAck ack) {
                d.acked.putIfAbsent(ack.cmid(), ack.seq());
                d.replies.computeIfAbsent(ack.cmid(), k -> new CopyOnWriteArrayList<>())
                        .add(new History.SentReply(ack.seq(), ack.dup()));
            }

            @Override
            public void onEvent(ReceivedEvent e) {
                rec.storedEvents.add(committedOf(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body()));
            }
        });
        d.client = c;
        connectWithRetry(d, 60_000);
    }

    private static History.CommittedEvent committedOf(String conv, long seq, String kind, String mid, String sender,
                                                     String cmid, String body) {
        return new History.CommittedEvent(conv, seq, kind, mid, sender, cmid, body);
    }

    /** What the device's socket received: event frames for visibility and content, cursor replies for their history. */
    private void record(Dev d, int epoch, ServerFrame f, long at) {
        if (f instanceof EventPush p) {
            Event e = p.ev();
            d.rec(epoch).seen.add(new History.Seen(History.Source.PUSH, at,
                    committedOf(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body())));
        } else if (f instanceof Synced s) {
            for (Event e : s.events()) {
                d.rec(epoch).seen.add(new History.Seen(History.Source.SYNC, at,
                        committedOf(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body())));
            }
        } else if (f instanceof Acked a) {
            d.rec(epoch).cursorReports.add(new History.CursorReport(a.conv(), a.delivered(), History.CursorSource.ACKED));
        } else if (f instanceof Subbed s) {
            for (ConvState c : s.convs()) {
                d.rec(epoch).cursorReports.add(new History.CursorReport(c.conv(), c.delivered(), History.CursorSource.SUBBED));
            }
        }
    }

    /** Old installs still connected this long after their reinstall (the revocation bound is 2 s). */
    private final AtomicLong staleStillOpen = new AtomicLong();

    /**
     * The nemesis' device reinstall, through the admin API: the old install's client is left
     * connected (the platform must close it with 4003 within the bound, and refuse its reads) and
     * watched for 3 s; then it is closed and the device starts fresh as a new install (new token,
     * empty state directory), as a user who reinstalled the app.
     */
    private String reinstall(int i) {
        Dev d = devices.get(i);
        if (d.parked) return d.id + " parked";
        JsonNode r;
        try {
            var req = java.net.http.HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + stack.gatewayPorts[0]
                            + "/admin/devices/" + d.id + "/reinstall"))
                    .header("Authorization", "Bearer " + Stack.ADMIN_TOKEN)
                    .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build();
            var resp = admin.send(req, java.net.http.HttpResponse.BodyHandlers.ofString());
            if (resp.statusCode() != 200) return d.id + " reinstall answered " + resp.statusCode() + " " + resp.body();
            r = JSON.readTree(resp.body());
        } catch (IOException e) {
            return d.id + " reinstall failed: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return d.id + " reinstall interrupted";
        }
        long at = System.currentTimeMillis();
        ImClient old = d.client;
        Rec rec = d.rec(d.epoch);
        rec.retiredAt = at;
        while (old.isConnected() && System.currentTimeMillis() < at + 3_000) LockSupport.parkNanos(50_000_000L);
        boolean stillOpen = old.isConnected();
        if (stillOpen) staleStillOpen.incrementAndGet();
        Map<String, List<Long>> stored = new TreeMap<>();
        Map<String, Long> local = new TreeMap<>();
        for (String conv : convs) {
            List<ReceivedEvent> evs = old.events(conv);
            if (!evs.isEmpty()) stored.put(conv, evs.stream().map(ReceivedEvent::seq).toList());
            if (old.cursor(conv) > 0) local.put(conv, old.cursor(conv));
        }
        Set<String> pending = new HashSet<>();
        for (PendingSend p : old.pending()) pending.add(p.cmid());
        rec.stored = stored;
        rec.local = local;
        rec.pending = pending;
        int epoch = r.get("epoch").asInt();
        d.token = r.get("token").asText();
        d.stateDir = d.stateDir.resolveSibling(d.id + "-e" + epoch);
        d.epoch = epoch;
        old.close();
        try {
            startClient(d);
        } catch (IOException e) {
            problems.add(d.id + " new install could not start: " + e);
        }
        return d.id + " epoch " + epoch + (stillOpen ? ", old install STILL CONNECTED 3 s later" : ", old install closed by the server");
    }

    /** The nemesis' client restart: the SDK closed and opened again from its state directory, like a restarted process. */
    private void restartClient(int i) {
        Dev d = devices.get(i);
        if (d.parked) return;
        d.client.close();
        try {
            startClient(d);
        } catch (IOException e) {
            problems.add(d.id + " could not be reopened from " + d.stateDir + ": " + e);
        }
    }

    private void connectWithRetry(Dev d, long millis) {
        long deadline = System.currentTimeMillis() + millis;
        while (true) {
            try {
                d.client.connect();
                return;
            } catch (IOException e) {
                if (System.currentTimeMillis() > deadline) {
                    problems.add(d.id + " could not connect: " + e);
                    return;
                }
                LockSupport.parkNanos(200_000_000L);
            }
        }
    }

    /** The nemesis' client fault: disconnect device {@code i}, stay away 0.5–2.5 s, connect again. */
    private void bounceClient(int i) {
        Dev d = devices.get(i);
        if (d.parked) return;
        d.client.disconnect();
        LockSupport.parkNanos((500 + (long) (Math.abs(d.id.hashCode() + System.nanoTime()) % 2000)) * 1_000_000L);
        if (!d.parked) connectWithRetry(d, 60_000);
    }

    // ------------------------------------------------------------------ load

    private void sendLoop(Dev d, double perSecond, Random r) {
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
            List<String> mine = new ArrayList<>(memberOf.get(d.user));
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
            d.attempts.add(new Attempt(cmid, conv, body, d.epoch));
            try {
                for (SentAck a : d.client.resendPending()) d.acked.put(a.cmid(), a.seq());
            } catch (IOException e) {
                sendErrors.incrementAndGet();   // not connected: stays in the outbox
            }
        }
    }

    /** Leaves and (re)joins in groups at evenly spread times; the senders' choice follows. */
    private void churn(long runStart, long runEnd, Random r) {
        if (o.membershipChanges() <= 0 || groupConvs.isEmpty()) return;
        long step = (runEnd - runStart) / (o.membershipChanges() + 1);
        List<String> groups = new ArrayList<>(groupConvs);
        List<String> users = new ArrayList<>(new java.util.TreeSet<>(memberOf.keySet()));
        users.removeIf(u -> u.startsWith("u-probe"));
        for (int i = 1; i <= o.membershipChanges() && !stopSenders.get(); i++) {
            long at = runStart + i * step;
            long now = System.currentTimeMillis();
            if (at > now) LockSupport.parkNanos((at - now) * 1_000_000L);
            String g = groups.get(r.nextInt(groups.size()));
            String u = users.get(r.nextInt(users.size()));
            boolean member = memberOf.get(u).contains(g);
            try {
                if (member) {
                    long inGroup = memberOf.values().stream().filter(s -> s.contains(g)).count();
                    if (inGroup <= 2) continue;
                    memberOf.get(u).remove(g);   // stop choosing it first: fewer sends rejected as NOT_MEMBER
                    member(g, u, false);
                    log("membership: %s left %s", u, g);
                } else {
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    log("membership: %s joined %s", u, g);
                }
                membershipDone.incrementAndGet();
            } catch (RuntimeException e) {   // e.g. PostgreSQL is down right now: the change may or may not have happened
                log("membership change %s %s failed: %s", u, g, e);
                resyncMemberships();
            }
        }
    }

    /**
     * A membership change through the admin API ({@code PUT}/{@code DELETE
     * /admin/conversations/{conv}/members/{user}}), as an operator makes it: on gateway 0, or gateway 1
     * when gateway 0 is down. Records the operation with the seq of its join/leave event.
     *
     * @throws IllegalStateException if neither gateway answered 200 (the change may or may not have happened)
     */
    private void member(String conv, String user, boolean add) {
        String failure = "";
        for (int gw = 0; gw < Stack.GATEWAYS; gw++) {
            try {
                var req = java.net.http.HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + stack.gatewayPorts[gw]
                                + "/admin/conversations/" + conv + "/members/" + user))
                        .header("Authorization", "Bearer " + Stack.ADMIN_TOKEN)
                        .timeout(Duration.ofSeconds(5))
                        .method(add ? "PUT" : "DELETE", java.net.http.HttpRequest.BodyPublishers.noBody()).build();
                var resp = admin.send(req, java.net.http.HttpResponse.BodyHandlers.ofString());
                if (resp.statusCode() == 200) {
                    JsonNode r = JSON.readTree(resp.body());
                    membershipOps.add(new History.MembershipOp(conv, user, r.get("event").asText(), r.get("seq").asLong(),
                            r.get("changed").asBoolean()));
                    return;
                }
                failure += " gateway" + gw + ": " + resp.statusCode() + " " + resp.body();
            } catch (IOException e) {
                failure += " gateway" + gw + ": " + e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted");
            }
        }
        throw new IllegalStateException((add ? "PUT " : "DELETE ") + conv + "/" + user + " failed:" + failure);
    }

    /**
     * The nemesis' membership churn of an online user, in one of three shapes: leave and rejoin
     * after a moment, a back-to-back leave+join, or a removal while the user keeps sending into the
     * conversation (its sends get NOT_MEMBER until the rejoin). Returns what it did.
     */
    private String churnOnce(int shape) {
        List<String> groups = new ArrayList<>(groupConvs);
        if (groups.isEmpty()) return "no groups";
        Random r = new Random(shape * 31L + membershipOps.size());
        String g = groups.get(r.nextInt(groups.size()));
        List<String> in = new ArrayList<>(new java.util.TreeSet<>(memberOf.entrySet().stream()
                .filter(e -> e.getValue().contains(g) && !e.getKey().startsWith("u-probe")).map(Map.Entry::getKey).toList()));
        if (in.size() <= 2) return g + " too small";
        String u = in.get(r.nextInt(in.size()));
        try {
            switch (shape % 3) {
                case 0 -> {
                    memberOf.get(u).remove(g);
                    member(g, u, false);
                    LockSupport.parkNanos(1_500_000_000L);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " left " + g + " and rejoined 1.5 s later";
                }
                case 1 -> {
                    memberOf.get(u).remove(g);
                    member(g, u, false);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " left and rejoined " + g + " back to back";
                }
                default -> {
                    // Removed while it sends: the senders keep choosing g for u, so some sends race the removal.
                    member(g, u, false);
                    LockSupport.parkNanos(1_000_000_000L);
                    memberOf.get(u).remove(g);
                    LockSupport.parkNanos(500_000_000L);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " removed from " + g + " while sending, rejoined";
                }
            }
        } catch (RuntimeException e) {
            resyncMemberships();
            return u + " " + g + " failed: " + e;
        } finally {
            membershipDone.incrementAndGet();
        }
    }

    private void resyncMemberships() {
        try {
            Map<String, Set<String>> now = new HashMap<>();
            query("SELECT user_id, conv_id FROM memberships WHERE to_seq IS NULL", rs -> {
                now.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getString(2));
            });
            for (Map.Entry<String, Set<String>> e : memberOf.entrySet()) {
                Set<String> want = now.getOrDefault(e.getKey(), Set.of());
                e.getValue().retainAll(want);
                e.getValue().addAll(want);
            }
        } catch (SQLException e) {
            log("cannot re-read memberships: %s", e);
        }
    }

    // ------------------------------------------------------------------ observation

    private interface RowHandler {
        void row(ResultSet rs) throws SQLException;
    }

    private void query(String sql, RowHandler h) throws SQLException {
        try (Connection c = stack.db.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement(sql);
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) h.row(rs);
        }
    }

    private Map<String, Long> heads() throws SQLException {
        Map<String, Long> m = new TreeMap<>();
        query("SELECT conv_id, head_seq FROM conversations", rs -> m.put(rs.getString(1), rs.getLong(2)));
        return m;
    }

    // ------------------------------------------------------------------ quiesce

    /** Resends outboxes and waits until every device's cursors (local and server) are at the head of its conversations. */
    private long quiesce() {
        long t0 = System.currentTimeMillis();
        long deadline = t0 + o.quiesceDeadline().toMillis();
        String lag = "";
        while (System.currentTimeMillis() < deadline) {
            for (Dev d : devices) {
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
            lag = lagging();
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

    /** What still lags (empty when converged). */
    private String lagging() {
        Map<String, Long> heads;
        Map<String, Set<String>> current = new HashMap<>();
        Map<String, Map<String, Long>> leftAt = new HashMap<>();   // user -> conv -> seq of the leave
        Map<String, Map<String, Long>> serverCursors = new HashMap<>();
        try {
            heads = heads();
            // A wait condition only: the checker judges the cursors the devices were told, not this table.
            query("SELECT device_id, conv_id, delivered_seq FROM device_cursors",
                    rs -> serverCursors.computeIfAbsent(rs.getString(1), k -> new HashMap<>()).put(rs.getString(2), rs.getLong(3)));
            query("SELECT user_id, conv_id FROM memberships WHERE to_seq IS NULL",
                    rs -> current.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getString(2)));
            query("SELECT m.user_id, m.conv_id, m.to_seq FROM memberships m WHERE m.to_seq IS NOT NULL AND NOT EXISTS"
                    + " (SELECT 1 FROM memberships x WHERE x.conv_id = m.conv_id AND x.user_id = m.user_id AND x.from_seq > m.from_seq)",
                    rs -> leftAt.computeIfAbsent(rs.getString(1), k -> new HashMap<>()).put(rs.getString(2), rs.getLong(3)));
        } catch (SQLException e) {
            return "database: " + e.getMessage();
        }
        for (Dev d : devices) {
            if (d.parked) continue;
            if (!d.client.pending().isEmpty()) return d.id + " has " + d.client.pending().size() + " pending";
            for (String conv : current.getOrDefault(d.user, Set.of())) {
                long head = heads.get(conv);
                long local = d.client.cursor(conv);
                long srv = serverCursors.getOrDefault(d.id, Map.of()).getOrDefault(conv, -1L);
                if (local != head || srv != head) {
                    return d.id + " in " + conv + ": local " + local + ", server " + srv + ", head " + head;
                }
            }
            // A conversation the user left: the device must still hold everything up to the leave.
            for (Map.Entry<String, Long> e : leftAt.getOrDefault(d.user, Map.of()).entrySet()) {
                long local = d.client.cursor(e.getKey());
                if (local < e.getValue()) return d.id + " in " + e.getKey() + " (left at " + e.getValue() + "): local " + local;
            }
        }
        return "";
    }

    // ------------------------------------------------------------------ history

    private History buildHistory() throws SQLException {
        List<History.SendRecord> sends = new ArrayList<>();
        for (Dev d : devices) {
            Set<String> pending = new HashSet<>();
            for (PendingSend p : d.client.pending()) pending.add(p.cmid());
            for (Attempt a : d.attempts) {
                List<History.SentReply> rs = List.copyOf(d.replies.getOrDefault(a.cmid(), List.of()));
                Set<String> pend = a.epoch() == d.epoch ? pending : d.rec(a.epoch()).pending;
                History.Outcome out = !rs.isEmpty() ? History.Outcome.SENT
                        : pend.contains(a.cmid()) ? History.Outcome.PENDING : History.Outcome.REJECTED;
                sends.add(new History.SendRecord(d.id, d.user, a.conv(), a.cmid(), a.body(), out, rs));
            }
        }
        Map<String, List<History.CommittedEvent>> committed = new TreeMap<>();
        query("SELECT conv_id, seq, kind, mid::text, sender, cmid, body FROM events ORDER BY conv_id, seq", rs ->
                committed.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(committedOf(
                        rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6),
                        rs.getString(7))));
        Map<String, Long> heads = heads();
        Map<String, Map<String, List<History.Period>>> visibility = new TreeMap<>();
        query("SELECT conv_id, user_id, from_seq, to_seq FROM memberships ORDER BY conv_id, user_id, from_seq", rs -> {
            long to = rs.getLong(4);
            if (rs.wasNull()) to = Long.MAX_VALUE;
            visibility.computeIfAbsent(rs.getString(1), k -> new TreeMap<>())
                    .computeIfAbsent(rs.getString(2), k -> new ArrayList<>()).add(new History.Period(rs.getLong(3), to));
        });
        Map<String, Map<String, Long>> finalServer = new HashMap<>();
        query("SELECT device_id, conv_id, delivered_seq FROM device_cursors", rs ->
                finalServer.computeIfAbsent(rs.getString(1), k -> new TreeMap<>()).put(rs.getString(2), rs.getLong(3)));
        List<History.DeviceRecord> devs = new ArrayList<>();
        for (Dev d : devices) {
            Map<String, List<Long>> stored = new TreeMap<>();
            Map<String, Long> local = new TreeMap<>();
            for (String conv : convs) {
                List<ReceivedEvent> evs = d.client.events(conv);
                if (!evs.isEmpty()) stored.put(conv, evs.stream().map(ReceivedEvent::seq).toList());
                long c = d.client.cursor(conv);
                if (c > 0 || visibility.getOrDefault(conv, Map.of()).containsKey(d.user)) local.put(conv, c);
            }
            Rec rec = d.rec(d.epoch);
            devs.add(new History.DeviceRecord(d.id, d.epoch, d.user, d.client.isConnected(), 0, stored, local,
                    finalServer.getOrDefault(d.id, Map.of()), List.copyOf(rec.seen), List.copyOf(rec.storedEvents),
                    List.copyOf(rec.cursorReports), d.client.pending().size()));
            for (Map.Entry<Integer, Rec> e : new TreeMap<>(d.recs).entrySet()) {
                if (e.getKey() == d.epoch) continue;
                Rec old = e.getValue();
                devs.add(new History.DeviceRecord(d.id, e.getKey(), d.user, false, old.retiredAt, old.stored, old.local,
                        Map.of(), List.copyOf(old.seen), List.copyOf(old.storedEvents), List.copyOf(old.cursorReports), 0));
            }
        }
        List<History.TopicRecord> topic = readTopic(heads);
        return new History(sends, committed, heads, topic, visibility, List.copyOf(membershipOps), devs);
    }

    /** The whole event topic from the beginning, until it covers every head (or 60 s passed) and a poll comes back empty. */
    private List<History.TopicRecord> readTopic(Map<String, Long> heads) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.broker.bootstrapServers());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<History.TopicRecord> out = new ArrayList<>();
        Map<String, Long> max = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            String topic = stack.topics.events();
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topic, Duration.ofSeconds(30)).forEach(i -> parts.add(new TopicPartition(topic, i.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    try {
                        EventRecord v = EventRecord.read(r.value());
                        out.add(new History.TopicRecord(v.conv(), v.seq()));
                        max.merge(v.conv(), v.seq(), Math::max);
                    } catch (MalformedRecordException e) {
                        problems.add("malformed topic record at " + r.partition() + "/" + r.offset() + ": " + e.getMessage());
                    }
                }
                boolean covered = heads.entrySet().stream().allMatch(e -> max.getOrDefault(e.getKey(), 0L) >= e.getValue());
                if (covered && records.isEmpty()) break;
            }
        }
        return out;
    }
}
