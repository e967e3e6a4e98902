package im.streams;

import im.infra.kafka.TopicNames;
import im.topics.Interest;
import im.topics.Heartbeat;
import im.topics.MalformedRecordException;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which gateways are alive, from their heartbeats on the gateways topic: a global store (every
 * task sees every gateway) used by the delivery nodes and the sweeper alike, so a crashed
 * gateway's routes and hints expire by one rule.
 */
public final class GatewayLiveness {
    /** Name of the global store: gateway id → latest well-formed heartbeat JSON. */
    public static final String STORE = "gateways";
    /** Reserved key of the store: the heartbeat with the newest time seen from any gateway. */
    static final String NEWEST = "\u0000newest";

    private static final Logger log = LoggerFactory.getLogger(GatewayLiveness.class);

    private GatewayLiveness() {}

    /** Adds the global heartbeat store fed by the gateways topic. */
    public static void addStore(Topology t, TopicNames topics) {
        t.addGlobalStore(
                Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(STORE), Serdes.String(), Serdes.String())
                        .withLoggingDisabled(),
                "gateways-source", Serdes.String().deserializer(), Serdes.String().deserializer(), topics.gateways(),
                "gateways-update", HeartbeatUpdater::new);
    }

    /**
     * Liveness of a gateway registration (gateway, generation). A registration is dead when the
     * gateway restarted since (a heartbeat of a newer generation) or when its generation's last
     * heartbeat is older than the lease, measured against the newest heartbeat of ANY gateway
     * (and never against more than {@code now}). So a Kafka outage, during which no heartbeat
     * arrives from anyone, does not make every gateway look dead and wipe all routes; a gateway
     * that died while others keep heartbeating expires after the lease. A gateway with no usable
     * heartbeat, or whose latest known heartbeat is of an older generation than the registration
     * (its new heartbeat is on its way on another topic), counts as alive.
     *
     * @param h      the gateway's latest heartbeat, or null
     * @param newest the newest heartbeat of any gateway, or null
     */
    private static boolean alive(Heartbeat h, Heartbeat newest, long gen, long now, Duration lease) {
        if (h == null) return true;
        if (h.gen() > gen) return false;
        if (h.gen() < gen) return true;
        long reference = newest == null ? now : Math.min(now, newest.at());
        return h.at() >= reference - lease.toMillis();
    }

    /**
     * How long (ms, behind the newest heartbeat of any gateway) a withdrawal is kept, and a gateway
     * may stay silent before the delivery nodes and the sweeper remove its registrations: six
     * digest intervals plus the gateway lease, so a frozen gateway never costs a live device its route.
     */
    public static long garbageHorizon(Duration lease, Duration renew) {
        return 6 * renew.toMillis() + lease.toMillis();
    }

    /**
     * The liveness questions the routing and the sweeper ask, over the global heartbeat store at
     * one instant. One rule for both apps. Heartbeats are decoded once per stored value (the
     * routing asks once per device of every event); one view per processor.
     */
    public static final class View implements Interest.Gateways {
        private final KeyValueStore<String, String> gateways;
        private final Duration lease;
        private final DecodedValues<Heartbeat> decoded = new DecodedValues<>(64 * 1024, GatewayLiveness::heartbeatOrMalformed);

        public View(KeyValueStore<String, String> gateways, Duration lease) {
            this.gateways = gateways;
            this.lease = lease;
        }

        /** {@link GatewayLiveness#alive}. */
        @Override
        public boolean alive(String gateway, long gen, long now) {
            return GatewayLiveness.alive(stored(gateway), stored(NEWEST), gen, now, lease);
        }

        @Override
        public boolean restartedSince(String gateway, long gen) {
            Heartbeat h = stored(gateway);
            return h != null && h.gen() > gen;
        }

        @Override
        public long lastSeen(String gateway, long gen) {
            Heartbeat h = stored(gateway);
            return h != null && h.gen() == gen ? h.at() : -1;
        }

        /**
         * What the garbage rules depend on, in one string: every gateway's generation, and which of
         * them have been silent for longer than {@code horizon}. A scan for garbage registrations
         * of restarted or departed gateways is needed only when this changes.
         */
        public String departures(long horizon) {
            StringBuilder b = new StringBuilder();
            try (org.apache.kafka.streams.state.KeyValueIterator<String, String> it = gateways.all()) {
                while (it.hasNext()) {
                    var kv = it.next();
                    if (kv.key.equals(NEWEST)) continue;
                    Heartbeat h = stored(kv.key);
                    if (h == null) continue;
                    b.append(kv.key).append('/').append(h.gen()).append(goneFor(kv.key, horizon) ? "/gone" : "").append(';');
                }
            }
            return b.toString();
        }

        /** The gateway has not heartbeated for longer than {@code horizon} behind the newest heartbeat of any. */
        public boolean goneFor(String gateway, long horizon) {
            Heartbeat h = stored(gateway);
            long newest = newest();
            return h != null && newest >= 0 && h.at() < newest - horizon;
        }

        @Override
        public long newest() {
            Heartbeat h = stored(NEWEST);
            return h == null ? -1 : h.at();
        }

        private Heartbeat stored(String key) {
            Heartbeat h = decoded.get(key, gateways.get(key));
            return h == MALFORMED ? null : h;
        }
    }

    /** Stands for a malformed stored heartbeat in the decoded cache (which keeps no nulls). */
    private static final Heartbeat MALFORMED = new Heartbeat("", -1, -1);

    private static Heartbeat heartbeatOrMalformed(String json) {
        Heartbeat h = heartbeat(json);
        return h == null ? MALFORMED : h;
    }

    /**
     * A stored heartbeat, or null. The store can hold a malformed value: a global store is restored
     * from the topic's raw records, bypassing {@link HeartbeatUpdater}; it counts as no heartbeat.
     */
    private static Heartbeat heartbeat(String json) {
        if (json == null) return null;
        try {
            return Heartbeat.read(json);
        } catch (MalformedRecordException e) {
            return null;
        }
    }

    /**
     * Keeps the latest well-formed heartbeat per gateway, and under {@link #NEWEST} the newest of
     * all; a malformed one is logged and skipped (it must not break routing).
     */
    private static final class HeartbeatUpdater extends ContextualProcessor<String, String, Void, Void> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            super.init(context);
            store = context.getStateStore(STORE);
        }

        @Override
        public void process(Record<String, String> r) {
            Heartbeat h = MalformedRecords.readKeyed(log, context(), r, Heartbeat::read, "heartbeat");
            if (h == null) return;
            store.put(r.key(), r.value());
            Heartbeat newest = heartbeat(store.get(NEWEST));
            if (newest == null || h.at() > newest.at()) store.put(NEWEST, r.value());
        }
    }
}
