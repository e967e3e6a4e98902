package im.delivery.route;

import im.infra.kafka.TopicNames;
import im.streams.ConvLogStore;
import im.streams.DecodedValues;
import im.streams.GatewayLiveness;
import im.streams.InterestLedger;
import im.streams.MalformedRecords;
import im.topics.ChannelRecord;
import im.topics.EventRecord;
import im.topics.Interest;
import im.topics.InterestDigest;
import im.topics.InterestMessage;
import im.topics.InterestRecord;
import im.topics.MembershipNotice;
import im.topics.PairKey;
import im.topics.Period;
import im.topics.RouteJson;
import im.topics.TypingRecord;
import im.protocol.Limits;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
 * The delivery nodes' routing, as a Kafka Streams topology over the co-partitioned event and
 * interest topics (both keyed by conversation), so one task sees, for its partitions, the events
 * and the online devices of the same conversations.
 * <ul>
 *   <li>events are folded in seq order into the conversation's log ({@link ConvLogStore}: the head,
 *       and each user's period from the join/leave events); a seq at or below the head is a CDC
 *       duplicate and dropped;</li>
 *   <li>each event is routed once per gateway to that gateway's channel, listing exactly the
 *       devices whose registration is {@linkplain Interest#live live} <b>and</b> whose user may see
 *       that seq per the log: interest says where a device is, never what it may see;</li>
 *   <li>a {@code join} or {@code leave} also goes to the notices topic, which every gateway reads
 *       (a new member's devices have no registration yet; a leaver's gateway ends the period);</li>
 *   <li>interest records are merged by {@link Interest#merge} into one entry per (conversation,
 *       device) ({@link PairKey}), so a registration or withdrawal rewrites that entry only, and an
 *       event reads the registrations of its own conversation as one prefix range; the gateways'
 *       digests keep them true without renewing each one ({@link InterestLedger}: a disagreement
 *       asks the gateway for the partition's registrations on its channel); a wall-clock sweep
 *       removes only garbage (old withdrawals, registrations of restarted or long-gone gateways).
 *       A gateway that is merely silent (frozen, cut off) keeps its entries and gets its routes
 *       back as soon as it heartbeats.</li>
 *   <li>a typing record (the co-partitioned typing topic) goes to the gateways of the conversation's
 *       other members' online devices, as an event does, if its user is a member per the log and it
 *       is fresh ({@link TypingRouter}); nothing of it is stored.</li>
 * </ul>
 * An event therefore costs O(1) store writes and O(registrations of its conversation) reads,
 * whatever the number of members; a member with no online device costs nothing.
 */
public final class DeliveryTopology {
    /** {@link PairKey}(conv, device) → {@link Interest} (its store form). */
    public static final String INTEREST_STORE = "interest-pairs";
    /** {@link PairKey}(conv, device) → "": the withdrawals in {@value #INTEREST_STORE}, the only entries that age into garbage on their own. */
    public static final String WITHDRAWN_STORE = "interest-withdrawn";
    public static final String GATEWAY_STORE = GatewayLiveness.STORE;
    /**
     * Characters of stored registrations per task whose decoded form the router keeps (about 90
     * characters each: some forty thousand online pairs), so a busy conversation's registrations
     * are parsed once, not once per event.
     */
    static final long DECODED_CHARS_PER_TASK = 4 << 20;

    private static final Logger log = LoggerFactory.getLogger(DeliveryTopology.class);
    private static final StringSerializer KEY_SER = new StringSerializer();

    private DeliveryTopology() {}

    /**
     * @param lease gateway heartbeat lease ({@code IM_GATEWAY_LEASE_MS})
     * @param renew how often gateways write their interest digests ({@code IM_INTEREST_RENEW_MS});
     *              a withdrawal, or a gateway silent, for {@link GatewayLiveness#garbageHorizon} is garbage
     */
    public static Topology build(TopicNames topics, Duration lease, Duration renew) {
        long horizon = GatewayLiveness.garbageHorizon(lease, renew);
        Topology t = new Topology();
        GatewayLiveness.addStore(t, topics);
        t.addSource("interest-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.interest());
        t.addSource("events-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.events());
        t.addProcessor("interest-update", () -> new InterestUpdater(topics, lease, horizon, 2 * renew.toMillis()), "interest-source");
        t.addProcessor("router", () -> new Router(topics, lease), "events-source");
        t.addSource("typing-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.typing());
        t.addProcessor("typing-router", () -> new TypingRouter(topics, lease), "typing-source");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(INTEREST_STORE), Serdes.String(), Serdes.String()),
                "interest-update", "router", "typing-router");
        InterestLedger.addStores(t, "interest-update");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(WITHDRAWN_STORE), Serdes.String(), Serdes.String()),
                "interest-update");
        ConvLogStore.addStores(t, "router", "typing-router");
        t.addSink("out", (key, value, ctx) -> {
                    Header h = ctx.headers().lastHeader(RouteJson.DEST_HEADER);
                    return new String(h.value(), StandardCharsets.UTF_8);
                }, Serdes.String().serializer(), Serdes.String().serializer(), "router", "interest-update", "typing-router");
        return t;
    }

    /**
     * Applies registrations and digests ({@link InterestLedger}), asks a gateway whose digest
     * disagrees twice for its registrations, and periodically removes garbage registrations.
     */
    private static final class InterestUpdater extends ContextualProcessor<String, String, String, String> {
        private final TopicNames topics;
        private final Duration lease;
        private final long horizon;
        private final long askAgainAfter;
        private KeyValueStore<String, String> interest;
        private KeyValueStore<String, String> withdrawn;
        private InterestLedger ledger;
        /** {@link GatewayLiveness.View#departures} when the last whole scan ran; null: none since the task started. */
        private String scannedFor;

        InterestUpdater(TopicNames topics, Duration lease, long horizon, long askAgainAfter) {
            this.topics = topics;
            this.lease = lease;
            this.horizon = horizon;
            this.askAgainAfter = askAgainAfter;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            super.init(context);
            interest = context.getStateStore(INTEREST_STORE);
            withdrawn = context.getStateStore(WITHDRAWN_STORE);
            ledger = InterestLedger.of(context, INTEREST_STORE, askAgainAfter);
            GatewayLiveness.View gateways = new GatewayLiveness.View(context.getStateStore(GATEWAY_STORE), lease);
            context.schedule(lease.dividedBy(2), PunctuationType.WALL_CLOCK_TIME, now -> removeGarbage(gateways));
        }

        /**
         * Removes garbage registrations without reading every registration every time: old
         * withdrawals are found through their index ({@value #WITHDRAWN_STORE}); registrations of a
         * restarted or departed gateway by a whole scan, run only when the gateways' generations or
         * departures changed since the last one (and once after the task starts). Idle, a tick reads
         * the heartbeats and the withdrawals, not the registrations.
         */
        private void removeGarbage(GatewayLiveness.View gateways) {
            List<String> garbage = new ArrayList<>();
            List<String> settled = new ArrayList<>();
            try (KeyValueIterator<String, String> it = withdrawn.all()) {
                while (it.hasNext()) {
                    String pair = it.next().key;
                    Interest i = Interest.fromStoreJson(interest.get(pair));
                    if (i == null || i.online()) settled.add(pair);   // gone, or registered again since
                    else if (i.garbage(gateways, horizon)) garbage.add(pair);
                }
            }
            settled.forEach(withdrawn::delete);
            garbage.forEach(k -> {
                interest.delete(k);
                withdrawn.delete(k);
            });
            String departures = gateways.departures(horizon);
            if (departures.equals(scannedFor)) return;
            garbage.clear();
            java.util.Set<String> gone = new java.util.HashSet<>(ledger.gateways());
            try (KeyValueIterator<String, String> it = interest.all()) {
                while (it.hasNext()) {
                    KeyValue<String, String> kv = it.next();
                    Interest i = Interest.fromStoreJson(kv.value);
                    if (i.garbage(gateways, horizon)) {
                        garbage.add(kv.key);
                        gone.add(i.gateway());   // also one not seen since this task started
                    }
                }
            }
            garbage.forEach(k -> {
                interest.delete(k);
                withdrawn.delete(k);
            });
            for (String g : gone) if (gateways.goneFor(g, horizon)) ledger.forget(g);
            scannedFor = departures;
        }

        @Override
        public void process(Record<String, String> r) {
            InterestMessage m = MalformedRecords.readKeyed(log, context(), r, InterestMessage::read, "interest record");
            if (m instanceof InterestRecord in) {
                InterestLedger.Change c = ledger.apply(r.key(), in);
                if (c != null && !c.after().online()) withdrawn.put(c.pair(), "");
            } else if (m instanceof InterestDigest d) {
                ChannelRecord.Resync ask = ledger.digest(d, context().currentSystemTimeMs()).ask();
                if (ask != null) context().forward(InterestLedger.request(topics, d.gateway(), ask, r.timestamp()));
            }
        }
    }

    /**
     * Routes a typing record to the online devices of the conversation's current members other than
     * its user, one {@link ChannelRecord.TypingFor} per gateway, if its user is a current member per
     * the log (the gateway does not ask the database) and the record is younger than
     * {@link Limits#TYPING_SHOW_MILLIS} (a node catching up after a restart does not replay old ones).
     */
    private static final class TypingRouter extends RoutingProcessor {
        TypingRouter(TopicNames topics, Duration lease) {
            super(topics, lease);
        }

        @Override
        public void process(Record<String, String> r) {
            TypingRecord t = MalformedRecords.read(log, context(), r, TypingRecord::read);
            if (t == null) return;
            long now = context().currentSystemTimeMs();
            Period typer = convLog.period(t.conv(), t.user());
            if (typer == null || !typer.open() || now - t.at() > Limits.TYPING_SHOW_MILLIS) return;
            Map<String, List<String>> targets = new TreeMap<>();
            Map<String, Boolean> members = new HashMap<>();
            try (KeyValueIterator<String, String> it = interest.prefixScan(PairKey.prefix(t.conv()), KEY_SER)) {
                while (it.hasNext()) {
                    KeyValue<String, String> kv = it.next();
                    Interest e = Interest.fromStoreJson(kv.value);
                    if (!e.online() || e.user().equals(t.user()) || !e.live(gateways, now)) continue;
                    if (!members.computeIfAbsent(e.user(), u -> {
                        Period p = convLog.period(t.conv(), u);
                        return p != null && p.open();
                    })) continue;
                    targets.computeIfAbsent(e.gateway(), g -> new ArrayList<>()).add(PairKey.second(kv.key));
                }
            }
            targets.forEach((gateway, devices) ->
                    forward(r, t.conv(), new ChannelRecord.TypingFor(devices, t.conv(), t.user()).toJson(), topics.channel(gateway)));
        }
    }

    /** What both routers read: the conversation's registrations, its log (head and periods) and the gateways' liveness. */
    private abstract static class RoutingProcessor extends ContextualProcessor<String, String, String, String> {
        final TopicNames topics;
        private final Duration lease;
        KeyValueStore<String, String> interest;
        ConvLogStore convLog;
        GatewayLiveness.View gateways;

        RoutingProcessor(TopicNames topics, Duration lease) {
            this.topics = topics;
            this.lease = lease;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            super.init(context);
            interest = context.getStateStore(INTEREST_STORE);
            convLog = ConvLogStore.of(context);
            gateways = new GatewayLiveness.View(context.getStateStore(GATEWAY_STORE), lease);
        }

        /** Forwards {@code value} under {@code key} to {@code topic} (the sink's destination header). */
        void forward(Record<String, String> in, String key, String value, String topic) {
            Record<String, String> out = new Record<>(key, value, in.timestamp());
            out.headers().add(RouteJson.DEST_HEADER, topic.getBytes(StandardCharsets.UTF_8));
            context().forward(out);
        }
    }

    /** Folds events into the conversation's log and routes each to the devices that may see it. */
    private static final class Router extends RoutingProcessor {
        // Decoded registrations, reused while the stored text is unchanged (see DecodedValues).
        private final DecodedValues<Interest> decoded =
                new DecodedValues<>(DECODED_CHARS_PER_TASK, Interest::fromStoreJson);

        Router(TopicNames topics, Duration lease) {
            super(topics, lease);
        }

        @Override
        public void process(Record<String, String> r) {
            EventRecord ev = MalformedRecords.read(log, context(), r, EventRecord::read);
            if (ev == null) return;
            String conv = ev.conv();
            long seq = ev.seq();
            if (!convLog.apply(ev)) return;   // a CDC duplicate (replay after a relay restart)

            long now = context().currentSystemTimeMs();
            // gateway → (device → the first seq of its user's period), for the devices that may see seq
            Map<String, Map<String, Long>> targets = new LinkedHashMap<>();
            Map<String, Period> periods = new HashMap<>();   // per user, read once per event
            try (KeyValueIterator<String, String> it = interest.prefixScan(PairKey.prefix(conv), KEY_SER)) {
                while (it.hasNext()) {
                    KeyValue<String, String> kv = it.next();
                    Interest e = decoded.get(kv.key, kv.value);
                    if (!e.online()) continue;
                    Period p = periods.computeIfAbsent(e.user(), u -> convLog.period(conv, u));
                    if (p == null || !p.covers(seq) || !e.live(gateways, now)) continue;
                    targets.computeIfAbsent(e.gateway(), g -> new TreeMap<>()).put(PairKey.second(kv.key), p.from());
                }
            }
            // Gateways write devices the event without a bulk join's list of users (its count stays).
            EventRecord pushed = ev.compact();
            for (Map.Entry<String, Map<String, Long>> g : targets.entrySet()) {
                Map<String, Long> from = g.getValue();
                forward(r, conv, new ChannelRecord.Push(new ArrayList<>(from.keySet()), from, pushed).toJson(), topics.channel(g.getKey()));
            }
            if (ev.isMembership()) {
                forward(r, conv, MembershipNotice.of(ev).toJson(), topics.notices());
            }
        }

    }
}
