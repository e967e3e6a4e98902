package im.delivery.route;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.kafka.TopicNames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
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
 *   <li>interest records update a per-conversation {@link InterestSet} (state store with changelog);</li>
 *   <li>each event is routed once per interested gateway to that gateway's channel with the list of
 *       its devices; CDC duplicates are dropped by (conv, seq) with a per-conversation high-water mark;</li>
 *   <li>a {@code join} also goes to the notices topic (the new member's online devices have no
 *       interest in the conversation yet); after a {@code leave} the member's devices are dropped;</li>
 *   <li>interest of gateways whose heartbeat stopped for longer than the lease, or that restarted
 *       with a newer generation, is dropped (lazily on routing and by a periodic sweep).</li>
 * </ul>
 */
public final class DeliveryTopology {
    public static final String INTEREST_STORE = "interest";
    public static final String SEQ_STORE = "routed-seq";
    public static final String GATEWAY_STORE = GatewayLiveness.STORE;
    /** Record header naming the destination topic of a routed record. */
    public static final String DEST_HEADER = "im-dest";

    private static final Logger log = LoggerFactory.getLogger(DeliveryTopology.class);

    private DeliveryTopology() {}

    public static Topology build(TopicNames topics, Duration lease) {
        Topology t = new Topology();
        GatewayLiveness.addStore(t, topics);
        t.addSource("interest-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.interest());
        t.addSource("events-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.events());
        t.addProcessor("interest-update", () -> new InterestUpdater(lease), "interest-source");
        t.addProcessor("router", () -> new Router(topics, lease), "events-source");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(INTEREST_STORE), Serdes.String(), Serdes.String()),
                "interest-update", "router");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(SEQ_STORE), Serdes.String(), Serdes.Long()),
                "router");
        t.addSink("out", (key, value, ctx) -> {
                    Header h = ctx.headers().lastHeader(DEST_HEADER);
                    return new String(h.value(), StandardCharsets.UTF_8);
                }, Serdes.String().serializer(), Serdes.String().serializer(), "router");
        return t;
    }

    static boolean alive(KeyValueStore<String, String> gateways, String gateway, long gen, long now, Duration lease) {
        return GatewayLiveness.alive(gateways, gateway, gen, now, lease);
    }

    /** Applies interest records and periodically drops the interest of dead gateways. */
    private static final class InterestUpdater implements Processor<String, String, Void, Void> {
        private final Duration lease;
        private KeyValueStore<String, String> interest;

        InterestUpdater(Duration lease) {
            this.lease = lease;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            interest = context.getStateStore(INTEREST_STORE);
            KeyValueStore<String, String> gateways = context.getStateStore(GATEWAY_STORE);
            context.schedule(lease.dividedBy(2), PunctuationType.WALL_CLOCK_TIME, now -> {
                try (KeyValueIterator<String, String> it = interest.all()) {
                    while (it.hasNext()) {
                        var kv = it.next();
                        InterestSet set = InterestSet.fromJson(kv.value);
                        if (set.retainAlive((gw, gen) -> alive(gateways, gw, gen, now, lease))) save(interest, kv.key, set);
                    }
                }
            });
        }

        @Override
        public void process(Record<String, String> r) {
            JsonNode v;
            try {
                v = RouteJson.parse(r.value());
            } catch (IllegalArgumentException | NullPointerException e) {
                log.warn("ignoring malformed interest record: {}", r.value());
                return;
            }
            String conv = r.key();
            InterestSet set = InterestSet.fromJson(interest.get(conv));
            String device = v.path("device").asText();
            String gateway = v.path("gateway").asText();
            long gen = v.path("gen").asLong();
            if (v.path("online").asBoolean()) {
                set.online(device, new InterestSet.Entry(v.path("user").asText(), gateway, gen));
            } else {
                set.offline(device, gateway, gen);
            }
            save(interest, conv, set);
        }
    }

    /** Routes each event once per interested gateway; drops CDC duplicates. */
    private static final class Router implements Processor<String, String, String, String> {
        private final TopicNames topics;
        private final Duration lease;
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> interest;
        private KeyValueStore<String, Long> routed;
        private KeyValueStore<String, String> gateways;

        Router(TopicNames topics, Duration lease) {
            this.topics = topics;
            this.lease = lease;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            interest = context.getStateStore(INTEREST_STORE);
            routed = context.getStateStore(SEQ_STORE);
            gateways = context.getStateStore(GATEWAY_STORE);
        }

        @Override
        public void process(Record<String, String> r) {
            JsonNode ev;
            try {
                ev = RouteJson.parse(r.value());
            } catch (IllegalArgumentException | NullPointerException e) {
                log.warn("ignoring malformed event record: {}", r.value());
                return;
            }
            String conv = ev.path("conv").asText();
            long seq = ev.path("seq").asLong();
            Long last = routed.get(conv);
            if (last != null && seq <= last) return;     // a CDC duplicate (replay after a relay restart)
            routed.put(conv, seq);

            InterestSet set = InterestSet.fromJson(interest.get(conv));
            long now = context.currentSystemTimeMs();
            boolean changed = set.retainAlive((gw, gen) -> alive(gateways, gw, gen, now, lease));
            for (Map.Entry<String, List<String>> g : set.byGateway().entrySet()) {
                forward(r, conv, RouteJson.channelEvent(g.getValue(), ev), topics.channel(g.getKey()));
            }
            String kind = ev.path("kind").asText();
            String member = ev.path("sender").asText();
            if ("join".equals(kind)) {
                forward(r, conv, RouteJson.joinNotice(member, ev), topics.notices());
            } else if ("leave".equals(kind)) {
                set.removeUser(member);
                changed = true;
            }
            if (changed) save(interest, conv, set);
        }

        private void forward(Record<String, String> in, String key, String value, String topic) {
            Record<String, String> out = new Record<>(key, value, in.timestamp());
            out.headers().add(DEST_HEADER, topic.getBytes(StandardCharsets.UTF_8));
            context.forward(out);
        }
    }

    private static void save(KeyValueStore<String, String> store, String conv, InterestSet set) {
        if (set.isEmpty()) store.delete(conv);
        else store.put(conv, set.toJson());
    }
}
