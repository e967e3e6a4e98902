package im.delivery.route;

import im.infra.kafka.TopicNames;
import im.routing.ConvLog;
import im.routing.DecodedValues;
import im.routing.GatewayLiveness;
import im.routing.MalformedRecords;
import im.topics.ChannelRecord;
import im.topics.EventRecord;
import im.topics.Interest;
import im.topics.InterestRecord;
import im.topics.MembershipNotice;
import im.topics.RouteJson;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
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
 *   <li>events are folded in seq order into the conversation's {@link ConvLog} (head and
 *       membership periods from the join/leave events); a seq at or below the head is a CDC
 *       duplicate and dropped;</li>
 *   <li>each event is routed once per gateway to that gateway's channel, listing exactly the
 *       devices whose registration is {@linkplain Interest#live live} <b>and</b> whose user may see
 *       that seq per the log: interest says where a device is, never what it may see;</li>
 *   <li>a {@code join} or {@code leave} also goes to the notices topic, which every gateway reads
 *       (a new member's devices have no registration yet; a leaver's gateway ends the period);</li>
 *   <li>interest records are merged by {@link Interest#merge}; a wall-clock sweep removes only
 *       garbage (withdrawals and registrations long expired, older generations of restarted
 *       gateways). A gateway that is merely silent (frozen, cut off) keeps its entries and gets
 *       its routes back as soon as it heartbeats and renews.</li>
 * </ul>
 */
public final class DeliveryTopology {
    public static final String INTEREST_STORE = "interest";
    /** conv → {@link ConvLog} JSON. */
    public static final String LOG_STORE = "conv-log";
    public static final String GATEWAY_STORE = GatewayLiveness.STORE;
    /**
     * Characters of stored text per task whose decoded log, and as many whose decoded interest set,
     * the router keeps: a group of eight takes about 200 characters of log and 900 of interest
     * set, so a thousand or more busy conversations per task stay decoded; a group of thousands,
     * fewer. The decoded objects take a few times their text.
     */
    static final long DECODED_CHARS_PER_TASK = 1 << 20;

    private static final Logger log = LoggerFactory.getLogger(DeliveryTopology.class);

    private DeliveryTopology() {}

    /**
     * @param lease gateway heartbeat lease ({@code IM_GATEWAY_LEASE_MS})
     * @param renew how often gateways renew their interest ({@code IM_INTEREST_RENEW_MS}); a
     *              registration not renewed for {@link GatewayLiveness#garbageHorizon} is garbage
     */
    public static Topology build(TopicNames topics, Duration lease, Duration renew) {
        long horizon = GatewayLiveness.garbageHorizon(lease, renew);
        Topology t = new Topology();
        GatewayLiveness.addStore(t, topics);
        t.addSource("interest-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.interest());
        t.addSource("events-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.events());
        t.addProcessor("interest-update", () -> new InterestUpdater(lease, horizon), "interest-source");
        t.addProcessor("router", () -> new Router(topics, lease), "events-source");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(INTEREST_STORE), Serdes.String(), Serdes.String()),
                "interest-update", "router");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(LOG_STORE), Serdes.String(), Serdes.String()),
                "router");
        t.addSink("out", (key, value, ctx) -> {
                    Header h = ctx.headers().lastHeader(RouteJson.DEST_HEADER);
                    return new String(h.value(), StandardCharsets.UTF_8);
                }, Serdes.String().serializer(), Serdes.String().serializer(), "router");
        return t;
    }

    /** Applies interest records and periodically removes garbage registrations. */
    private static final class InterestUpdater extends ContextualProcessor<String, String, Void, Void> {
        private final Duration lease;
        private final long horizon;
        private KeyValueStore<String, String> interest;

        InterestUpdater(Duration lease, long horizon) {
            this.lease = lease;
            this.horizon = horizon;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            super.init(context);
            interest = context.getStateStore(INTEREST_STORE);
            GatewayLiveness.View gateways = new GatewayLiveness.View(context.getStateStore(GATEWAY_STORE), lease);
            context.schedule(lease.dividedBy(2), PunctuationType.WALL_CLOCK_TIME, now -> {
                List<String> keys = new java.util.ArrayList<>();
                try (KeyValueIterator<String, String> it = interest.all()) {
                    while (it.hasNext()) keys.add(it.next().key);
                }
                for (String conv : keys) {
                    InterestSet set = InterestSet.fromJson(interest.get(conv));
                    if (set.removeIf((d, e) -> e.garbage(gateways, horizon))) save(interest, conv, set);
                }
            });
        }

        @Override
        public void process(Record<String, String> r) {
            InterestRecord in = MalformedRecords.readKeyed(log, context(), r, InterestRecord::read, "interest record");
            if (in == null) return;
            InterestSet set = InterestSet.fromJson(interest.get(r.key()));
            set.apply(in.device(), in.interest());
            save(interest, r.key(), set);
        }
    }

    /** Folds events into the conversation's log and routes each to the devices that may see it. */
    private static final class Router extends ContextualProcessor<String, String, String, String> {
        private final TopicNames topics;
        private final Duration lease;
        private KeyValueStore<String, String> interest;
        private KeyValueStore<String, String> logs;
        private GatewayLiveness.View gateways;
        // Decoded store values, reused while the stored text is unchanged (see DecodedValues).
        private final DecodedValues<ConvLog> decodedLogs = new DecodedValues<>(DECODED_CHARS_PER_TASK, ConvLog::fromJson);
        private final DecodedValues<InterestSet> decodedInterest = new DecodedValues<>(DECODED_CHARS_PER_TASK, InterestSet::fromJson);

        Router(TopicNames topics, Duration lease) {
            this.topics = topics;
            this.lease = lease;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            super.init(context);
            interest = context.getStateStore(INTEREST_STORE);
            logs = context.getStateStore(LOG_STORE);
            gateways = new GatewayLiveness.View(context.getStateStore(GATEWAY_STORE), lease);
        }

        @Override
        public void process(Record<String, String> r) {
            EventRecord ev = MalformedRecords.read(log, context(), r, EventRecord::read);
            if (ev == null) return;
            String conv = ev.conv();
            long seq = ev.seq();
            String stored = logs.get(conv);
            ConvLog taken = decodedLogs.take(conv, stored);
            ConvLog convLog = taken == null ? ConvLog.empty() : taken;
            if (!convLog.apply(seq, ev.kind(), ev.sender())) {   // a CDC duplicate (replay after a relay restart)
                if (stored != null) decodedLogs.put(conv, stored, convLog);   // unchanged
                return;
            }
            String text = convLog.toJson();
            logs.put(conv, text);
            decodedLogs.put(conv, text, convLog);

            InterestSet storedSet = decodedInterest.get(conv, interest.get(conv));
            InterestSet set = storedSet == null ? InterestSet.empty() : storedSet;
            long now = context().currentSystemTimeMs();
            Map<String, List<String>> targets = set.byGateway(
                    e -> convLog.visible(e.user(), seq) && e.live(gateways, now));
            for (Map.Entry<String, List<String>> g : targets.entrySet()) {
                Map<String, Long> from = new java.util.TreeMap<>();
                for (String d : g.getValue()) from.put(d, convLog.periodStart(set.get(d).user()));
                forward(r, conv, new ChannelRecord.Push(g.getValue(), from, ev).toJson(), topics.channel(g.getKey()));
            }
            if (ev.isMembership()) {
                forward(r, conv, MembershipNotice.of(ev).toJson(), topics.notices());
            }
        }

        private void forward(Record<String, String> in, String key, String value, String topic) {
            Record<String, String> out = new Record<>(key, value, in.timestamp());
            out.headers().add(RouteJson.DEST_HEADER, topic.getBytes(StandardCharsets.UTF_8));
            context().forward(out);
        }
    }

    private static void save(KeyValueStore<String, String> store, String conv, InterestSet set) {
        if (set.isEmpty()) store.delete(conv);
        else store.put(conv, set.toJson());
    }
}
