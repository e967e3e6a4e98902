package im.gateway;

import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.kafka.ConsumerDefaults;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.KafkaClients;
import im.infra.kafka.Topics;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Hint;
import im.protocol.Unread;
import im.topics.ChannelRecord;
import im.topics.EventRecord;
import im.topics.Heartbeat;
import im.topics.Interest;
import im.topics.InterestDigest;
import im.topics.InterestRecord;
import im.topics.MalformedRecordException;
import im.topics.MembershipNotice;
import im.topics.Notice;
import im.topics.ReadNotice;
import im.topics.TypingRecord;
import im.protocol.TypingPush;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's side of delivery. On {@code sub} it publishes, per conversation, "device D of user
 * U is online here (gateway G, generation g, connection version v)" to the interest topic, and
 * withdraws it when the connection closes. It does not renew registrations one by one: every
 * {@code IM_INTEREST_RENEW_MS} (at once after a failed publish or when it finds its own timer ran
 * late, i.e. it was frozen) it writes one {@link InterestDigest} per partition of the interest
 * topic (count and sum of the registrations it holds there, in order after them), and re-sends a
 * partition's registrations when a delivery node or the sweeper asks ({@link ChannelRecord.Resync}):
 * idle upkeep costs O(partitions), whatever the devices and conversations. It announces itself on
 * the gateways topic so that delivery nodes skip its routes while it is silent. It
 * consumes its own channel (events and hints routed to its devices) and the notices topic (joins
 * and leaves, which keep each connection's {@link Visibility} up to date), and writes a frame only
 * to a device it still holds whose period covers the seq. Pushing is best effort: correctness
 * comes from cursors, sync and hints.
 */
final class PushHub implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PushHub.class);

    private final GatewayConfig cfg;
    private final KafkaClientConfig kafka;
    private final long gen;
    private final Faults faults;
    private final AtomicLong versions = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicBoolean publishFailed = new java.util.concurrent.atomic.AtomicBoolean();
    private long lastTick;
    private long lastRenew;
    private final Map<String, DeviceConnection> byDevice = new ConcurrentHashMap<>();
    private final Map<String, Set<DeviceConnection>> byUser = new ConcurrentHashMap<>();
    /** Every open connection with registrations (a replaced one too, until it closes): what a re-send covers. */
    private final Set<DeviceConnection> registeredConns = ConcurrentHashMap.newKeySet();
    /** Per partition of the interest topic: the digest of what this gateway holds there, and the lock that orders its writes. */
    private InterestSlot[] slots;
    final AtomicLong digestsPublished = new AtomicLong();
    final AtomicLong resyncsServed = new AtomicLong();
    final AtomicLong pushed = new AtomicLong();
    final AtomicLong droppedByFault = new AtomicLong();
    final AtomicLong hintsDelivered = new AtomicLong();
    /** {@code unread} frames pushed: a read on another device of the connection's user. */
    final AtomicLong readsPushed = new AtomicLong();
    final AtomicLong typingPushed = new AtomicLong();
    private KafkaProducer<String, String> producer;
    private KafkaConsumer<String, String> consumer;
    private ScheduledExecutorService timer;
    private Thread poller;
    private volatile boolean running;

    /** {@code cfg} must name a Kafka bootstrap; {@code gen} tells this start of the gateway from earlier ones. */
    PushHub(GatewayConfig cfg, long gen, Faults faults) {
        this.cfg = cfg;
        this.kafka = cfg.kafka().orElseThrow(() -> new IllegalArgumentException("pushing needs IM_KAFKA_BOOTSTRAP"));
        this.gen = gen;
        this.faults = faults;
    }

    /**
     * Starts pushing; the shared topics must exist (SharedTopics), this gateway's channel is created here.
     *
     * @throws IllegalStateException naming them, at once, if shared topics are missing (a consumer
     *         would otherwise wait a minute for a partition that never appears, then time out)
     */
    PushHub start() {
        List<String> shared = new java.util.ArrayList<>(cfg.topics().conversationKeyed());
        shared.addAll(cfg.topics().singlePartition());
        java.util.Set<String> missing = new java.util.TreeSet<>(shared);
        missing.removeAll(Topics.describe(kafka, shared).keySet());
        if (!missing.isEmpty()) {
            throw new IllegalStateException("topics " + missing + " do not exist on " + kafka.bootstrap() + ": create the shared"
                    + " topics before starting a gateway (SharedTopics.create; the role runner and im platform do)");
        }
        Topics.create(kafka, List.of(cfg.topics().channel(cfg.gatewayId())), 1, cfg.replication());
        // Never hold a request thread for long when Kafka is unreachable: pushes are best effort.
        producer = KafkaClients.durableProducer(kafka, Map.of(ProducerConfig.LINGER_MS_CONFIG, "0",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "2000"));
        slots = new InterestSlot[producer.partitionsFor(cfg.topics().interest()).size()];
        for (int i = 0; i < slots.length; i++) slots[i] = new InterestSlot(i);
        publishHeartbeat();
        consumer = KafkaClients.assignedConsumer(kafka, Map.of(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, ConsumerDefaults.FETCH_MAX_WAIT_MS));
        List<TopicPartition> parts = List.of(new TopicPartition(cfg.topics().channel(cfg.gatewayId()), 0),
                new TopicPartition(cfg.topics().notices(), 0));
        consumer.assign(parts);
        // A (re)started gateway holds no connections yet: what was routed before is of no use.
        consumer.seekToEnd(parts);
        parts.forEach(consumer::position);
        running = true;
        poller = new Thread(this::poll, "gw-push-" + cfg.gatewayId());
        poller.setDaemon(true);
        poller.start();
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gw-heartbeat");
            t.setDaemon(true);
            return t;
        });
        lastTick = lastRenew = System.currentTimeMillis();
        timer.scheduleAtFixedRate(this::tick, cfg.heartbeat().toMillis(), cfg.heartbeat().toMillis(), TimeUnit.MILLISECONDS);
        return this;
    }

    private void publishHeartbeat() {
        producer.send(new ProducerRecord<>(cfg.topics().gateways(), cfg.gatewayId(),
                new Heartbeat(cfg.gatewayId(), gen, System.currentTimeMillis()).toJson()));
    }

    /**
     * One heartbeat tick; also writes the digests when the interval has passed, a publish failed
     * since the last ones, or this tick ran late (the process was frozen or starved for longer
     * than the heartbeat: the Streams roles may have dropped what they took for gone).
     */
    private void tick() {
        try {
            long now = System.currentTimeMillis();
            boolean late = now - lastTick > 2 * cfg.heartbeat().toMillis();
            lastTick = now;
            publishHeartbeat();
            if (late || now - lastRenew >= cfg.interestRenew().toMillis() || publishFailed.getAndSet(false)) {
                lastRenew = now;
                for (InterestSlot slot : slots) publishDigest(slot, -1);
            }
        } catch (RuntimeException e) {
            log.warn("heartbeat tick: {}", e.toString());   // the next tick tries again
        }
    }

    /** Writes the slot's digest to its partition, after every registration written there before. */
    private void publishDigest(InterestSlot slot, long since) {
        synchronized (slot) {
            String value = new InterestDigest(cfg.gatewayId(), gen, slot.partition, slot.count(), slot.sum(), since,
                    System.currentTimeMillis()).toJson();
            send(new ProducerRecord<>(cfg.topics().interest(), slot.partition, cfg.gatewayId(), value), "the digest of partition " + slot.partition);
            digestsPublished.incrementAndGet();
        }
    }

    /** A delivery node or the sweeper disagrees with partition {@code p}'s digest: write its registrations again. */
    private void resend(ChannelRecord.Resync r) {
        if (r.gen() != gen || r.partition() >= slots.length) return;
        InterestSlot slot = slots[r.partition()];
        long now = System.currentTimeMillis();
        synchronized (slot) {
            if (now - slot.resentAt < RESEND_AT_MOST_EVERY_MS) return;   // the delivery nodes and the sweeper ask alike
            slot.resentAt = now;
        }
        for (DeviceConnection c : registeredConns) {
            for (String conv : List.copyOf(c.registered)) {
                if (partition(conv) != slot.partition) continue;
                synchronized (slot) {
                    long ver;
                    synchronized (c) {
                        if (c.closed || !c.registered.contains(conv)) continue;
                        ver = c.interestVersion;
                    }
                    publishInterest(c, conv, ver, true, slot.partition);
                }
            }
        }
        publishDigest(slot, now);
        resyncsServed.incrementAndGet();
    }

    private int partition(String conv) {
        return InterestDigest.partitionOf(conv, slots.length);
    }

    /**
     * Before {@code sub} reads the memberships: from now on this gateway's join and leave notices
     * for the user reach the connection, so a membership change that commits while the read is in
     * flight is applied either by the read or by its notice, never by neither.
     */
    void attach(DeviceConnection conn) {
        var p = conn.principal();
        DeviceConnection previous = byDevice.put(p.deviceId(), conn);
        if (previous != null && previous != conn) {
            removeFromUser(previous);
            conn.replaced = previous;   // its registrations become this connection's as it registers them
        }
        byUser.computeIfAbsent(p.userId(), u -> ConcurrentHashMap.newKeySet()).add(conn);
        if (!conn.isOpen()) unsubscribe(conn);   // closed meanwhile: its close handler may have run already
    }

    /**
     * After a {@code sub} page's read: the user's current periods in that page (conv → join seq);
     * registers them here. Idempotent on a connection: a repeated {@code sub} publishes interest
     * only for conversations this connection has not registered yet (a client that sends
     * {@code sub} in a loop costs reads, not routing traffic).
     */
    void subscribe(DeviceConnection conn, Map<String, Long> fromSeqByConv) {
        fromSeqByConv.forEach(conn.visibility::joined);
        boolean first;
        synchronized (conn) {
            if (conn.closed) return;   // a connection that has closed is never registered
            first = conn.interestVersion == 0;
            if (first) conn.interestVersion = nextVersion();
        }
        registeredConns.add(conn);
        // The first page also registers what join notices added before the connection had a
        // version (they could not register it then); from then on a notice registers its own
        // conversation, so a later page registers only its own: a paged sub costs O(conversations).
        if (first) {
            for (String conv : conn.visibility.memberConvs()) register(conn, conv);
        } else {
            for (String conv : fromSeqByConv.keySet()) if (conn.visibility.member(conv)) register(conn, conv);
        }
        synchronized (conn) {
            if (conn.closed) registeredConns.remove(conn);   // closed meanwhile: its close handler has withdrawn what it held
        }
    }

    /**
     * Publishes the connection's registration for {@code conv} once, and counts it in the
     * partition's digest; a registration the device's replaced connection on this gateway held
     * for {@code conv} leaves the digest, as the newer version replaces it in the Streams roles.
     */
    private void register(DeviceConnection conn, String conv) {
        InterestSlot slot = slots[partition(conv)];
        String device = conn.principal().deviceId();
        synchronized (slot) {
            long ver;
            synchronized (conn) {
                if (conn.closed || conn.interestVersion == 0 || !conn.registered.add(conv)) return;
                ver = conn.interestVersion;
            }
            DeviceConnection rep = conn.replaced;
            if (rep != null) {
                long repVer;
                synchronized (rep) {
                    repVer = rep.interestVersion;
                }
                if (rep.registered.remove(conv)) slot.remove(InterestDigest.term(conv, device, repVer));
            }
            slot.add(InterestDigest.term(conv, device, ver));
            publishInterest(conn, conv, ver, true, slot.partition);
        }
    }

    /** Versions grow with every connection this gateway registers (wall-clock based, so across restarts too). */
    private long nextVersion() {
        long floor = System.currentTimeMillis() * 1000;
        return versions.updateAndGet(v -> Math.max(v + 1, floor));
    }

    /** On close: withdraw the device's interest, once; a late {@code sub} of this connection registers nothing. */
    void unsubscribe(DeviceConnection conn) {
        var p = conn.principal();
        if (p == null) return;
        long ver;
        Set<String> convs;
        synchronized (conn) {
            if (conn.closed) return;
            conn.closed = true;
            ver = conn.interestVersion;
            convs = new java.util.HashSet<>(conn.registered);   // no registration is added after closed
        }
        removeFromUser(conn);
        byDevice.remove(p.deviceId(), conn);
        if (ver != 0) {
            convs.addAll(conn.visibility.allConvs());
            for (String conv : convs) {
                InterestSlot slot = slots[partition(conv)];
                synchronized (slot) {
                    if (conn.registered.remove(conv)) slot.remove(InterestDigest.term(conv, p.deviceId(), ver));
                    publishInterest(conn, conv, ver, false, slot.partition);
                }
            }
        }
        registeredConns.remove(conn);
        conn.replaced = null;
    }

    private void removeFromUser(DeviceConnection conn) {
        Set<DeviceConnection> s = byUser.get(conn.principal().userId());
        if (s != null) s.remove(conn);
    }

    /** Writes a registration to {@code partition} (the conversation's, named so that it is ordered with the slot's digest). */
    private void publishInterest(DeviceConnection conn, String conv, long ver, boolean online, int partition) {
        if (faults.shouldDrop(FaultPoint.GW_INTEREST)) return;   // a test's lost publish: the digest finds it
        var p = conn.principal();
        String value = new InterestRecord(conv, p.deviceId(),
                new Interest(p.userId(), cfg.gatewayId(), gen, ver, online, System.currentTimeMillis())).toJson();
        send(new ProducerRecord<>(cfg.topics().interest(), partition, conv, value), "interest for " + conv);
    }

    /** A failed publish makes the next tick write the digests, so the Streams roles notice what is missing. */
    private void send(ProducerRecord<String, String> record, String what) {
        send(record, () -> {
            publishFailed.set(true);
            return what + " not published (found by the next digest)";
        });
    }

    /** Publishes {@code record}; a failure (at once or acknowledged) runs {@code failed}, which says what is lost, for the log. */
    private void send(ProducerRecord<String, String> record, java.util.function.Supplier<String> failed) {
        try {
            producer.send(record, (md, e) -> {
                if (e != null) log.warn("{}: {}", failed.get(), e.toString());
            });
        } catch (org.apache.kafka.common.KafkaException e) {
            log.warn("{}: {}", failed.get(), e.toString());
        }
    }

    private void poll() {
        while (running) {
            try {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    try {
                        if (r.topic().equals(cfg.topics().notices())) {
                            Notice n = Notice.read(r.value());
                            if (n instanceof MembershipNotice m) onNotice(m);
                            else onRead((ReadNotice) n);
                        } else {
                            onChannel(ChannelRecord.read(r.value()));
                        }
                    } catch (MalformedRecordException e) {
                        log.warn(MalformedRecordException.describe(r.topic(), r.partition(), r.offset(), e));
                    } catch (RuntimeException e) {   // one record must not cost the rest of the batch
                        log.warn("ignoring a routed record that cannot be handled at {}-{}@{}: {}",
                                r.topic(), r.partition(), r.offset(), e.toString());
                    }
                }
            } catch (WakeupException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("push consumer: {}", e.toString());
            }
        }
    }

    private void onChannel(ChannelRecord msg) {
        if (msg instanceof ChannelRecord.Resync r) {
            resend(r);
            return;
        }
        if (msg instanceof ChannelRecord.TypingFor t) {
            DeviceConnection.PushText typing = new DeviceConnection.PushText(new TypingPush(t.conv(), t.user()));
            for (String d : t.devices()) {
                DeviceConnection c = byDevice.get(d);
                if (c != null && c.visibility.member(t.conv()) && c.push(typing)) typingPushed.incrementAndGet();
            }
            return;
        }
        if (msg instanceof ChannelRecord.HintFor h) {
            DeviceConnection.PushText hint = new DeviceConnection.PushText(new Hint(h.conv(), h.head(), h.why()));
            for (String d : h.devices()) {
                DeviceConnection c = byDevice.get(d);
                if (c != null && c.visibility.visible(h.conv(), h.head()) && c.push(hint)) {
                    hintsDelivered.incrementAndGet();
                }
            }
            return;
        }
        ChannelRecord.Push push = (ChannelRecord.Push) msg;
        EventRecord ev = push.ev();
        Fanout fanout = new Fanout(new DeviceConnection.PushText(new EventPush(ev.toWire())));
        for (String d : push.devices()) {
            DeviceConnection c = byDevice.get(d);
            if (c == null) continue;
            // The join behind this route may still be on its way on the notices topic (another
            // partition): apply it from the log's own word. Only a later change ever replaces a period.
            Long from = push.from().get(d);
            if (from != null) c.visibility.joined(ev.conv(), from);
            if (mayDeliver(c, ev)) fanout.add(c);
        }
        fanout.send();
    }

    /**
     * One frame to many connections, written by each connection's I/O thread in one task per
     * thread: a write made on the channel's own I/O thread goes out at once, where one made on
     * this thread is handed over (a task and a wake-up of the I/O thread per connection). Each
     * connection is on one I/O thread and its tasks run in order, so its pushes stay in order.
     */
    private final class Fanout {
        private final DeviceConnection.PushText frame;
        private final Map<Executor, List<DeviceConnection>> byThread = new HashMap<>(4);

        Fanout(DeviceConnection.PushText frame) {
            this.frame = frame;
        }

        void add(DeviceConnection c) {
            byThread.computeIfAbsent(c.ioThread(), t -> new ArrayList<>()).add(c);
        }

        void send() {
            if (byThread.isEmpty()) return;
            frame.text();   // encoded once, here, before the I/O threads read it
            byThread.forEach((thread, conns) -> thread.execute(() -> {
                for (DeviceConnection c : conns) if (c.push(frame)) pushed.incrementAndGet();
            }));
        }
    }

    /**
     * A join registers each new member's connections here and pushes the join (a bulk join: every
     * listed user's, one notice for them all); a leave ends their period.
     */
    private void onNotice(MembershipNotice msg) {
        EventRecord ev = msg.ev();
        Fanout fanout = null;
        for (String user : msg.users()) {
            Set<DeviceConnection> conns = byUser.get(user);
            if (conns == null) continue;
            if (fanout == null) fanout = new Fanout(new DeviceConnection.PushText(new EventPush(ev.toWire())));
            for (DeviceConnection c : conns) {
                if (msg.isJoin()) {
                    if (c.visibility.joined(ev.conv(), ev.seq())) register(c, ev.conv());
                    if (mayDeliver(c, ev)) fanout.add(c);
                } else {
                    c.visibility.left(ev.conv(), ev.seq());
                }
            }
        }
        if (fanout != null) fanout.send();
    }

    /**
     * A read cursor moved: the user's connections here other than the reading device's get the
     * read state as an {@code unread} push (the reading device had it in its {@code readack}).
     */
    private void onRead(ReadNotice n) {
        Set<DeviceConnection> conns = byUser.get(n.user());
        if (conns == null) return;
        DeviceConnection.PushText frame = null;
        for (DeviceConnection c : conns) {
            if (c.principal().deviceId().equals(n.device())) continue;
            if (frame == null) frame = new DeviceConnection.PushText(new Unread(n.conv(), n.state()));
            if (c.push(frame)) readsPushed.incrementAndGet();
        }
    }

    /** Passes a typing on to the delivery nodes (the typing topic); best effort, like a push. */
    void publishTyping(TypingRecord t) {
        send(new ProducerRecord<>(cfg.topics().typing(), t.conv(), t.toJson()), () -> "typing in " + t.conv() + " not published");
    }

    /** Tells every gateway (this one included) that a read cursor moved; best effort, like a push. */
    void publishRead(ReadNotice n) {
        send(new ProducerRecord<>(cfg.topics().notices(), n.conv(), n.toJson()),
                () -> "read notice for " + n.conv() + " not published (the other devices get the read state at their next sub)");
    }

    /** Whether the event's frame goes to this connection: the device's period covers it (and no fault drops it). */
    private boolean mayDeliver(DeviceConnection c, EventRecord ev) {
        if (Event.LEAVE.equals(ev.kind()) && ev.sender().equals(c.principal().userId())) {
            c.visibility.left(ev.conv(), ev.seq());   // the leave itself is still visible to the leaver
        }
        if (!c.visibility.visible(ev.conv(), ev.seq())) return false;
        if (faults.shouldDrop(FaultPoint.GW_PUSH)) {
            droppedByFault.incrementAndGet();
            return false;
        }
        return true;
    }

    /** At most one re-send of a partition within this long: every delivery node and sweeper task of it asks. */
    private static final long RESEND_AT_MOST_EVERY_MS = 1_000;

    /** One partition of the interest topic: count and sum of this gateway's registrations there. Guarded by itself. */
    private static final class InterestSlot extends InterestDigest.Tally {
        final int partition;
        long resentAt;

        InterestSlot(int partition) {
            this.partition = partition;
        }
    }

    @Override
    public void close() {
        running = false;
        if (timer != null) timer.shutdownNow();
        if (consumer != null) {
            consumer.wakeup();
            try {
                poller.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            consumer.close(Duration.ofSeconds(2));
        }
        if (producer != null) producer.close(Duration.ofSeconds(5));
    }
}
