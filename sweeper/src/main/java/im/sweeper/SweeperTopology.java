package im.sweeper;

import im.infra.kafka.TopicNames;
import im.streams.ConvLogStore;
import im.streams.GatewayLiveness;
import im.streams.InterestLedger;
import im.streams.MalformedRecords;
import im.sweeper.PairState.Lag;
import im.topics.ChannelRecord;
import im.topics.Cursor;
import im.topics.CursorRecord;
import im.topics.EventRecord;
import im.topics.Interest;
import im.topics.InterestDigest;
import im.topics.InterestMessage;
import im.topics.InterestRecord;
import im.topics.PairKey;
import im.topics.RouteJson;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sweeper (invariant D5) as a Kafka Streams topology over the co-partitioned event, cursor and
 * interest topics (all keyed by conversation), so one task holds, for its partitions, the heads,
 * the cursors and the online devices of the same conversations. State (persistent, with
 * changelogs, so a restarted or second instance carries on without rescanning the database), one
 * entry per thing that changes, never a value that grows with the conversation:
 * <ul>
 *   <li>{@link ConvLogStore}: conv → head (max seq seen on the event topic), and per (conv, user)
 *       the latest visibility period, folded from the join/leave events of the same log;</li>
 *   <li>{@value #CURSORS_STORE}: pair → (epoch, delivered), never moving backwards within an epoch;</li>
 *   <li>{@value #ONLINE_STORE}: pair → {@link Interest} (merged by its one rule), from interest records,
 *       kept true by the gateways' digests ({@link InterestLedger}, as in the delivery nodes);</li>
 *   <li>{@value #LAGGING_STORE}: pair → {@link Lag} (mark, since, last hint, hints), the online
 *       pairs in a spell of their own: hinted and not yet caught up to the head their user may see
 *       ({@link ConvLogStore#visibleHead}: the head for a member, the leave for a former member,
 *       nothing for someone who never was one), or waiting for a silent gateway;</li>
 *   <li>{@value #FRESH_STORE} (in memory): pairs that registered (a new connection) or reinstalled
 *       behind that head less than the due interval ago, with when.</li>
 * </ul>
 * Besides, in memory, the arrival time of each seq of the conversations whose head moved within the
 * due interval: {@code sweep} plus the gateways' ack throttle (a throttled cursor reaches the
 * sweeper up to that much later). Every {@code sweep} the punctuator
 * <ol>
 *   <li>walks the index and hints each pair not hinted within the back-off ({@code backoff},
 *       doubling with each hint of the spell, see {@link Lag}); a pair that reached its
 *       {@code mark} while the head moved on starts a new spell (a device that keeps up);</li>
 *   <li>checks the fresh pairs registered at least the due interval ago (a device that just
 *       subscribed syncs by itself);</li>
 *   <li>visits, once, the online pairs of each conversation whose <em>due head</em> (the highest seq
 *       that arrived at least the due interval ago) moved since its last visit, and hints those
 *       below it, as far as their user may see: a device that keeps up always holds it, one that
 *       lost a push is hinted at the first tick a seq it lacks has been known that long.</li>
 * </ol>
 * Hints go on the pair's gateway's channel ({@code ChannelRecord.HintFor}, one record per
 * conversation, gateway and visible head, {@code why:"sweep"}); pairs whose registration is not
 * {@linkplain Interest#live live} (gateway silent) wait in the index and are hinted as soon as it
 * is; only garbage registrations are dropped. Per event: the log's write and an entry in memory,
 * no pair; per cursor record, its pair; per registration, its pair. A tick costs the index, the
 * fresh pairs and the online pairs of the conversations that had events (once each), not online
 * devices × conversations. The arrival times and fresh pairs are not durable: a starting task takes
 * every head as arrived at its start and, from one due interval later, visits all its online pairs
 * ({@value #FIRST_PASS_PAIRS_PER_TICK} per tick).
 */
public final class SweeperTopology {
    public static final String CURSORS_STORE = "cursors";
    public static final String ONLINE_STORE = "online";
    public static final String LAGGING_STORE = "lagging";
    public static final String FRESH_STORE = "fresh";
    /** Online pairs a starting task's first pass visits per tick. */
    static final int FIRST_PASS_PAIRS_PER_TICK = 20_000;
    public static final String GATEWAYS_STORE = GatewayLiveness.STORE;
    /** The {@code why} of the hints this topology emits. */
    public static final String WHY = "sweep";

    private static final Logger log = LoggerFactory.getLogger(SweeperTopology.class);
    private static final StringSerializer KEY_SER = new StringSerializer();

    private SweeperTopology() {}

    public static Topology build(TopicNames topics, Duration sweep, Duration backoff, Duration lease, Duration renew) {
        return build(topics, sweep, backoff, lease, renew, new LongAdder());
    }

    /**
     * @param hints incremented by the number of devices in every hint emitted (a metric the
     *              caller owns; no static state)
     */
    public static Topology build(TopicNames topics, Duration sweep, Duration backoff, Duration lease, Duration renew,
                                 LongAdder hints) {
        return build(topics, sweep, backoff, lease, renew, new SweepStats(hints));
    }

    /** @param stats the counts behind the sweeper's meters (hints, repairs, lagging pairs by age) */
    public static Topology build(TopicNames topics, Duration sweep, Duration backoff, Duration lease, Duration renew,
                                 SweepStats stats) {
        return build(topics, sweep, backoff, lease, renew, Duration.ZERO, stats);
    }

    /**
     * @param ackThrottle the gateways' {@code IM_ACK_THROTTLE_MS}: a device's cursor reaches the
     *                    sweeper up to that long after the device acked, so a spell is due only
     *                    {@code sweep + ackThrottle} after it began; without it a device that keeps
     *                    up was hinted whenever its throttled cursor record was still on its way
     * @param stats       the counts behind the sweeper's meters (hints, repairs, lagging pairs by age)
     */
    public static Topology build(TopicNames topics, Duration sweep, Duration backoff, Duration lease, Duration renew,
                                 Duration ackThrottle, SweepStats stats) {
        if (sweep.toMillis() < 1) throw new IllegalArgumentException("sweep must be at least 1 ms, got " + sweep);
        if (backoff.isNegative()) throw new IllegalArgumentException("backoff must not be negative, got " + backoff);
        if (ackThrottle.isNegative()) throw new IllegalArgumentException("ackThrottle must not be negative, got " + ackThrottle);
        Topology t = new Topology();
        GatewayLiveness.addStore(t, topics);
        t.addSource("events-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.events());
        t.addSource("cursors-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.cursors());
        t.addSource("interest-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.interest());
        t.addProcessor("heads-and-sweep", () -> new HeadsAndSweep(topics, sweep, ackThrottle, backoff, lease, renew, stats), "events-source");
        t.addProcessor("cursors-update", () -> new CursorUpdater(stats), "cursors-source");
        t.addProcessor("interest-update", () -> new InterestUpdater(topics, stats, 2 * renew.toMillis()), "interest-source");
        // Every processor touches every store: that also puts the three sources in one sub-topology.
        String[] all = {"heads-and-sweep", "cursors-update", "interest-update"};
        ConvLogStore.addStores(t, all);
        InterestLedger.addStores(t, all);
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(CURSORS_STORE), Serdes.String(), Serdes.String()), all);
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(ONLINE_STORE), Serdes.String(), Serdes.String()), all);
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(LAGGING_STORE), Serdes.String(), Serdes.String()), all);
        // In memory, no changelog: a starting task's first pass covers what it held.
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(FRESH_STORE), Serdes.String(), Serdes.Long())
                .withLoggingDisabled(), all);
        t.addSink("out", (key, value, ctx) -> {
                    Header h = ctx.headers().lastHeader(RouteJson.DEST_HEADER);
                    return new String(h.value(), StandardCharsets.UTF_8);
                }, Serdes.String().serializer(), Serdes.String().serializer(), "heads-and-sweep", "interest-update");
        return t;
    }

    /**
     * The task-local stores and the transitions of a pair's spell ({@value #LAGGING_STORE},
     * {@value #FRESH_STORE}). Shared by the three processors of a task.
     */
    private abstract static class PairProcessor<KOut, VOut> extends ContextualProcessor<String, String, KOut, VOut> {
        protected ConvLogStore logs;
        protected KeyValueStore<String, String> cursors;
        protected KeyValueStore<String, String> online;
        protected KeyValueStore<String, String> lagging;
        /** Pairs that registered or reinstalled behind the head, and when: due one interval later. */
        protected KeyValueStore<String, Long> fresh;
        protected final SweepStats stats;

        PairProcessor(SweepStats stats) {
            this.stats = stats;
        }

        @Override
        public void init(ProcessorContext<KOut, VOut> context) {
            super.init(context);
            logs = ConvLogStore.of(context);
            cursors = context.getStateStore(CURSORS_STORE);
            online = context.getStateStore(ONLINE_STORE);
            lagging = context.getStateStore(LAGGING_STORE);
            fresh = context.getStateStore(FRESH_STORE);
        }

        /** The delivered cursor; 0 for a device that never acked (or whose cursors were cleared). */
        protected long cursor(String pair) {
            String c = cursors.get(pair);
            return c == null ? 0 : PairState.cursor(c).delivered();
        }

        protected Lag lag(String pair) {
            String l = lagging.get(pair);
            return l == null ? null : Lag.fromJson(l);
        }

        /**
         * Re-derives the lagging entry of a pair from its cursor and the head its user may see: a
         * pair that caught up leaves the index (an online pair that was hinted and caught up is a
         * completed repair); one still behind keeps its spell while it has not reached the spell's
         * mark, and starts a new one (mark: the head now) when it has. One behind without a spell
         * (it just registered or reinstalled) is {@linkplain #fresh fresh}: checked one due
         * interval from now, and written to the index only if it is still behind then.
         */
        protected void reevaluate(String conv, String pair, Interest where, long now) {
            reevaluate(conv, pair, where, lag(pair), now);
        }

        /** As above, with the pair's lagging entry already read ({@code was}, null if none). */
        protected void reevaluate(String conv, String pair, Interest where, Lag was, long now) {
            if (where == null || !where.online()) {
                if (was != null) lagging.delete(pair);
                if (fresh.get(pair) != null) fresh.delete(pair);
                return;
            }
            long cursor = cursor(pair);
            long target = logs.visibleHead(conv, where.user());
            if (cursor >= target) {
                if (was != null) {
                    if (was.lastHint() != Lag.NEVER) stats.repairs.increment();
                    lagging.delete(pair);
                }
            } else if (was == null) {
                fresh.put(pair, now);
            } else if (cursor >= was.mark()) {
                lagging.put(pair, Lag.spell(target, now, was.lastHint()).toJson());
            }
        }

        protected void dropPair(String pair) {
            online.delete(pair);
            if (lagging.get(pair) != null) lagging.delete(pair);
            if (fresh.get(pair) != null) fresh.delete(pair);
        }

        /** The record read by {@code reader}, or null (logged with topic, partition and offset, and skipped) if malformed. */
        protected <T> T read(Record<String, String> r, java.util.function.Function<String, T> reader) {
            return MalformedRecords.read(log, context(), r, reader);
        }

        /** The stored registration of a pair (written by {@link Interest#toStoreJson}), or null. */
        protected Interest online(String pair) {
            return Interest.fromStoreJson(online.get(pair));
        }
    }

    /**
     * Raises heads from events, remembering when each seq arrived, and runs the sweep. An event
     * costs its log write and an entry in memory, whatever the number of online members: no pair
     * is read or written per event. A pair is checked at the first tick at which a seq above its
     * cursor has been known for {@code dueAfter}.
     */
    private static final class HeadsAndSweep extends PairProcessor<String, String> {
        private final TopicNames topics;
        private final long sweep;
        /** A spell is due this long after it began: the sweep interval plus the ack throttle. */
        private final long dueAfter;
        private final long backoff;
        private final Duration lease;
        private final long horizon;
        private GatewayLiveness.View gateways;
        private InterestLedger ledger;   // only to forget gateways gone for good
        /** Conversations whose head moved less than {@code dueAfter} ago (or whose due head was not visited yet). */
        private final Map<String, HeadHistory> watched = new HashMap<>();
        /**
         * When this task (re)started its first pass over all its online pairs begins: the arrival
         * times of events before the start are not known, so every head is taken as arrived at the
         * start. A restarted or moved task thereby hints what was lost before it, one
         * {@code dueAfter} later, at the cost of one pass over its pairs, spread over ticks of
         * {@value #FIRST_PASS_PAIRS_PER_TICK} pairs so that no tick holds the stream thread long.
         */
        private long firstPassAt;
        /** Where the first pass goes on (null: from the start, or done once {@link #firstPassDone}). */
        private String firstPassFrom;
        private boolean firstPassDone;

        HeadsAndSweep(TopicNames topics, Duration sweep, Duration ackThrottle, Duration backoff, Duration lease, Duration renew,
                      SweepStats stats) {
            super(stats);
            this.topics = topics;
            this.sweep = sweep.toMillis();
            this.dueAfter = sweep.toMillis() + ackThrottle.toMillis();
            this.backoff = backoff.toMillis();
            this.lease = lease;
            this.horizon = GatewayLiveness.garbageHorizon(lease, renew);
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            super.init(context);
            gateways = new GatewayLiveness.View(context.getStateStore(GATEWAYS_STORE), lease);
            ledger = InterestLedger.of(context, ONLINE_STORE, 0);
            firstPassAt = context.currentSystemTimeMs() + dueAfter;
            // One punctuator per task (only this processor schedules it).
            context.schedule(Duration.ofMillis(sweep), PunctuationType.WALL_CLOCK_TIME, this::sweep);
        }

        @Override
        public void process(Record<String, String> r) {
            EventRecord ev = read(r, EventRecord::read);
            if (ev == null) return;
            String conv = ev.conv();
            long before = logs.head(conv);
            logs.apply(ev);
            long after = logs.head(conv);
            HeadHistory h = watched.get(conv);
            if (h == null) {
                // Not watched: its head arrived at least dueAfter ago (or before this task started,
                // which the first pass covers). A replay (no new head, maybe a membership change
                // re-applied) gets its conversation visited at the next tick.
                h = new HeadHistory(before);
                watched.put(conv, h);
            }
            if (after > before) h.arrived(context().currentSystemTimeMs(), after);
            else h.visited = -1;
        }

        /**
         * One tick: hint the due pairs, grouped per (conversation, gateway, visible head); drop
         * garbage. Three kinds of pairs are due: those in the lagging index (hinted and not caught
         * up, or waiting for a silent gateway: their back-off decides), the fresh pairs whose
         * interval is over and still behind, and, among the online pairs of the conversations
         * whose due head moved since their last visit (and of the first pass), those whose cursor
         * is below it.
         */
        private void sweep(long now) {
            Hints hints = new Hints();
            List<KeyValue<String, String>> writes = new ArrayList<>();
            List<String> stale = new ArrayList<>();
            List<String> dead = new ArrayList<>();
            long[] byAge = new long[SweepStats.AGES.size()];
            // Changes are applied after the iterator is closed, not while it is open.
            try (KeyValueIterator<String, String> it = lagging.all()) {
                while (it.hasNext()) {
                    KeyValue<String, String> kv = it.next();
                    String pair = kv.key;
                    String conv = PairKey.conv(pair);
                    Interest where = online(pair);
                    long target = where == null ? 0 : logs.visibleHead(conv, where.user());
                    if (where == null || !where.online() || cursor(pair) >= target) {   // defensive: the index should never hold these
                        stale.add(pair);
                        continue;
                    }
                    if (where.garbage(gateways, horizon)) {
                        dead.add(pair);
                        continue;
                    }
                    Lag lag = Lag.fromJson(kv.value);
                    for (int i = 0; i < byAge.length; i++) if (now - lag.since() >= SweepStats.AGES.get(i).toMillis()) byAge[i]++;
                    // Silent gateway: wait; the pair is hinted once the route is live again.
                    if (!where.live(gateways, now)) continue;
                    if (!lag.due(now, dueAfter, backoff)) continue;
                    hints.add(conv, where.gateway(), target, PairKey.second(pair));
                    writes.add(KeyValue.pair(pair, lag.hinted(now).toJson()));
                }
            }
            stale.forEach(lagging::delete);
            apply(writes, dead);

            long cutoff = now - dueAfter;
            List<KeyValue<String, Long>> registered = new ArrayList<>();
            try (KeyValueIterator<String, Long> it = fresh.all()) {
                while (it.hasNext()) {
                    KeyValue<String, Long> kv = it.next();
                    if (kv.value <= cutoff) registered.add(kv);
                }
            }
            for (KeyValue<String, Long> kv : registered) {
                fresh.delete(kv.key);
                String conv = PairKey.conv(kv.key);
                Interest where = online(kv.key);
                if (where == null || !where.online()) continue;
                long target = logs.visibleHead(conv, where.user());
                if (cursor(kv.key) < target) due(conv, kv.key, where, target, kv.value, now, hints, writes, dead);
            }
            apply(writes, dead);

            for (HeadHistory h : watched.values()) h.advance(cutoff);
            // Until one due interval after the start, heads known at the start may be younger than
            // that: the watched conversations wait (the first pass and their visits come then).
            if (now >= firstPassAt) {
                if (!firstPassDone) {
                    try (KeyValueIterator<String, String> on = from(online);
                         KeyValueIterator<String, String> cur = from(cursors);
                         KeyValueIterator<String, String> lag = from(lagging)) {
                        firstPassFrom = visit(on, cur, lag, conv -> {
                            HeadHistory h = watched.get(conv);
                            return h == null ? logs.head(conv) : h.due;
                        }, now, hints, writes, dead, FIRST_PASS_PAIRS_PER_TICK);
                    }
                    firstPassDone = firstPassFrom == null;
                    // The conversations it covered whole need no visit of the same due head.
                    String stop = firstPassDone ? null : PairKey.conv(firstPassFrom);
                    watched.forEach((conv, h) -> {
                        if (stop == null || conv.compareTo(stop) < 0) h.visited = h.due;
                    });
                    apply(writes, dead);   // before the visits below open their iterators
                }
                for (Map.Entry<String, HeadHistory> e : watched.entrySet()) {
                    HeadHistory h = e.getValue();
                    if (h.due <= h.visited) continue;
                    String prefix = PairKey.prefix(e.getKey());
                    try (KeyValueIterator<String, String> on = online.prefixScan(prefix, KEY_SER);
                         KeyValueIterator<String, String> cur = cursors.prefixScan(prefix, KEY_SER);
                         KeyValueIterator<String, String> lag = lagging.prefixScan(prefix, KEY_SER)) {
                        visit(on, cur, lag, conv -> h.due, now, hints, writes, dead, Integer.MAX_VALUE);
                    }
                    h.visited = h.due;
                }
                watched.values().removeIf(HeadHistory::settled);
            }
            apply(writes, dead);

            hints.forward(now);
            stats.swept(context().taskId().toString(), byAge);
            for (String g : ledger.gateways()) if (gateways.goneFor(g, horizon)) ledger.forget(g);
        }

        /**
         * Applies what a part of the tick decided, once its iterators are closed: the index entries
         * it wrote and the garbage registrations it found (logged); both lists are emptied.
         */
        private void apply(List<KeyValue<String, String>> writes, List<String> dead) {
            dead.forEach(this::dropPair);
            if (!dead.isEmpty()) log.info("dropped {} pairs of dead gateways", dead.size());
            writes.forEach(kv -> lagging.put(kv.key, kv.value));
            writes.clear();
            dead.clear();
        }

        /** The first pass's iterator over a store: from where it stopped at the last tick (keys in order). */
        private KeyValueIterator<String, String> from(KeyValueStore<String, String> store) {
            return firstPassFrom == null ? store.all() : store.range(firstPassFrom, null);
        }

        /**
         * Walks online pairs (in key order) beside the cursors and the lagging index (the same
         * keys, so a merge, no lookup per pair): a pair outside the index whose cursor is below the
         * conversation's due head, as far as its user may see it, starts a spell that began
         * {@code dueAfter} ago and is hinted now (or, on a silent gateway, waits in the index).
         *
         * @return the key of the first online pair not visited (at most {@code limit} are), null if none is left
         */
        private String visit(KeyValueIterator<String, String> on, KeyValueIterator<String, String> cur,
                             KeyValueIterator<String, String> lag, java.util.function.ToLongFunction<String> dueHead,
                             long now, Hints hints, List<KeyValue<String, String>> writes, List<String> dead, int limit) {
            String curKey = null;
            String curValue = null;
            String lagKey = null;
            String conv = null;
            long due = 0;
            long visited = 0;
            // Ids are ASCII (the protocol's id rule), so String order is the stores' byte order.
            while (on.hasNext()) {
                if (visited == limit) {
                    stats.visited.add(visited);
                    return on.peekNextKey();
                }
                KeyValue<String, String> kv = on.next();
                String pair = kv.key;
                visited++;
                while (lagKey == null || lagKey.compareTo(pair) < 0) {
                    if (!lag.hasNext()) { lagKey = "\uffff"; break; }
                    lagKey = lag.next().key;
                }
                while (curKey == null || curKey.compareTo(pair) < 0) {
                    if (!cur.hasNext()) { curKey = "\uffff"; curValue = null; break; }
                    KeyValue<String, String> c = cur.next();
                    curKey = c.key;
                    curValue = c.value;
                }
                if (pair.equals(lagKey)) continue;   // in a spell of its own: the lagging pass decides it
                String c = PairKey.conv(pair);
                if (!c.equals(conv)) {
                    conv = c;
                    due = dueHead.applyAsLong(conv);
                }
                long cursor = pair.equals(curKey) ? PairState.cursor(curValue).delivered() : 0;
                if (cursor >= due) continue;
                Interest where = Interest.fromStoreJson(kv.value);
                if (where == null || !where.online()) continue;
                long target = logs.visibleHead(conv, where.user());
                long heldFor = Math.min(target, due);   // the highest seq it may see, known for dueAfter
                if (cursor >= heldFor || !logs.visible(conv, where.user(), heldFor)) continue;
                if (fresh.get(pair) != null) continue;   // registered within the interval: due later
                due(conv, pair, where, target, now - dueAfter, now, hints, writes, dead);
            }
            stats.visited.add(visited);
            return null;
        }

        /**
         * A pair found due (behind since {@code since}): hinted now and entered in the index as
         * hinted, or, on a silent gateway, entered to wait; a garbage registration is dropped.
         */
        private void due(String conv, String pair, Interest where, long target, long since, long now,
                         Hints hints, List<KeyValue<String, String>> writes, List<String> dead) {
            if (where.garbage(gateways, horizon)) {
                dead.add(pair);
                return;
            }
            Lag spell = Lag.spell(target, since, Lag.NEVER);
            if (where.live(gateways, now)) {
                hints.add(conv, where.gateway(), target, PairKey.second(pair));
                spell = spell.hinted(now);
            }
            writes.add(KeyValue.pair(pair, spell.toJson()));
        }

        /** Device hints of one tick: conv → gateway → head → devices, one record each. */
        private final class Hints {
            private final Map<String, Map<String, Map<Long, List<String>>>> due = new LinkedHashMap<>();

            void add(String conv, String gateway, long head, String device) {
                due.computeIfAbsent(conv, c -> new LinkedHashMap<>())
                        .computeIfAbsent(gateway, g -> new LinkedHashMap<>())
                        .computeIfAbsent(head, h -> new ArrayList<>())
                        .add(device);
            }

            void forward(long now) {
                due.forEach((conv, byGateway) -> byGateway.forEach((gateway, byHead) -> byHead.forEach((head, devices) -> {
                    Record<String, String> out = new Record<>(conv, new ChannelRecord.HintFor(devices, conv, head, WHY).toJson(), now);
                    out.headers().add(RouteJson.DEST_HEADER, topics.channel(gateway).getBytes(StandardCharsets.UTF_8));
                    context().forward(out);
                    stats.hints.add(devices.size());
                })));
            }
        }

        @Override
        public void close() {
            stats.closed(context().taskId().toString());   // the task moves away: its pairs are counted where it goes
        }
    }

    /**
     * When a watched conversation's recent seqs arrived (wall clock of this task), so that a tick
     * knows its due head: the highest seq that arrived at least {@code dueAfter} ago. Arrivals
     * within one millisecond share an entry; the entries live for {@code dueAfter}.
     */
    private static final class HeadHistory {
        /** The highest seq that arrived at least dueAfter ago (as of the last tick). */
        long due;
        /** The due head at this conversation's last visit (-1: visit it at the next tick). */
        long visited;
        private final ArrayDeque<long[]> pending = new ArrayDeque<>();   // {arrivedAt, seq}, in arrival order

        /** @param due the head before the first arrival (it arrived at least dueAfter ago, and was visited when it did) */
        HeadHistory(long due) {
            this.due = due;
            this.visited = due;
        }

        void arrived(long at, long seq) {
            long[] last = pending.peekLast();
            if (last != null && last[0] == at) last[1] = seq;
            else pending.addLast(new long[] {at, seq});
        }

        void advance(long cutoff) {
            while (!pending.isEmpty() && pending.peekFirst()[0] <= cutoff) due = Math.max(due, pending.pollFirst()[1]);
        }

        /** Nothing left to visit: every seq is due and was visited. */
        boolean settled() {
            return pending.isEmpty() && visited >= due;
        }
    }

    /**
     * Merges cursor records ({@code {"v":1,"conv","device","epoch","delivered","at"}} or
     * {@code {"v":1,"conv","device","deleted":true,"epoch"}} after a reinstall) and re-derives the pair's lag.
     */
    private static final class CursorUpdater extends PairProcessor<Void, Void> {
        CursorUpdater(SweepStats stats) {
            super(stats);
        }

        @Override
        public void process(Record<String, String> r) {
            CursorRecord c = read(r, CursorRecord::read);
            if (c == null || c instanceof CursorRecord.Read) return;   // a user's read cursor: not delivery
            String conv = c.conv();
            String pair = PairKey.of(conv, c instanceof CursorRecord.Update u ? u.device() : ((CursorRecord.Deleted) c).device());
            if (c instanceof CursorRecord.Update u) {
                String prev = cursors.get(pair);
                Cursor merged = prev == null ? new Cursor(u.epoch(), u.delivered()) : PairState.cursor(prev).merge(u.epoch(), u.delivered());
                String text = PairState.json(merged);
                if (text.equals(prev)) return;   // a duplicate or stale record: nothing moved
                cursors.put(pair, text);
                // Only a pair in the index has a spell a cursor can end or restart; any other pair is
                // judged by the tick against the due head (or, if fresh, when its interval is over).
                Lag was = lag(pair);
                if (was != null) {
                    Interest where = online(pair);
                    if (where != null) reevaluate(conv, pair, where, was, context().currentSystemTimeMs());
                }
                return;
            } else if (c instanceof CursorRecord.Deleted d) {
                // The device reinstalled: a cursor of an older install is gone (cursor 0). One of the
                // new install may already be here (the cursor service publishes it, the relay this
                // record) and stays; the reset's epoch is kept so a late record of an older install
                // cannot come back.
                String prev = cursors.get(pair);
                Cursor had = prev == null ? null : PairState.cursor(prev);
                if (d.epoch() == CursorRecord.Deleted.ANY_EPOCH) {
                    cursors.delete(pair);
                } else if (had == null || d.removes((int) had.epoch())) {
                    cursors.put(pair, PairState.json(new Cursor(d.epoch(), 0)));
                }
            }
            Interest where = online(pair);
            if (where != null) reevaluate(conv, pair, where, context().currentSystemTimeMs());
        }
    }

    /**
     * Applies interest records and digests (docs/topics.md) through the {@link InterestLedger}, the
     * same rules as the delivery nodes; a new connection (a higher version) starts the pair's lag
     * afresh, since a device that just subscribed syncs by itself. A withdrawal (also one found by a
     * digest: a registration its gateway no longer holds) is kept (so a late registration of the
     * closed connection cannot come back) and takes the pair out of the lagging index.
     */
    private static final class InterestUpdater extends PairProcessor<String, String> {
        private final TopicNames topics;
        private final long askAgainAfter;
        private InterestLedger ledger;

        InterestUpdater(TopicNames topics, SweepStats stats, long askAgainAfter) {
            super(stats);
            this.topics = topics;
            this.askAgainAfter = askAgainAfter;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            super.init(context);
            ledger = InterestLedger.of(context, ONLINE_STORE, askAgainAfter);
        }

        @Override
        public void process(Record<String, String> r) {
            InterestMessage m = read(r, InterestMessage::read);
            long now = context().currentSystemTimeMs();
            if (m instanceof InterestRecord rec) {
                InterestLedger.Change c = ledger.apply(rec.conv(), rec);
                if (c != null) changed(rec.conv(), c, now);
            } else if (m instanceof InterestDigest d) {
                InterestLedger.Outcome o = ledger.digest(d, now);
                for (InterestLedger.Change c : o.withdrawn()) changed(PairKey.conv(c.pair()), c, now);
                if (o.ask() != null) context().forward(InterestLedger.request(topics, d.gateway(), o.ask(), r.timestamp()));
            }
        }

        private void changed(String conv, InterestLedger.Change c, long now) {
            Interest prev = c.before();
            Interest merged = c.after();
            // A re-send (same connection, still online) changes nothing about the lag.
            if (prev != null && merged.ver() == prev.ver() && merged.online() == prev.online()) return;
            Lag was = lag(c.pair());
            if (was != null && (prev == null || merged.ver() != prev.ver())) {
                lagging.delete(c.pair());
                was = null;
            }
            reevaluate(conv, c.pair(), merged, was, now);
        }
    }
}
