package im.streams;

import im.infra.kafka.TopicNames;
import im.topics.ChannelRecord;
import im.topics.PairKey;
import im.topics.Interest;
import im.topics.InterestDigest;
import im.topics.InterestRecord;
import im.topics.RouteJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The registrations of one Streams task (one partition of the interest topic), as the delivery
 * nodes and the sweeper keep them, and the lease that keeps them true without renewing each one.
 *
 * <p>Three stores:
 * <ul>
 *   <li>the routing view (the caller's store): {@link PairKey}(conv, device) → the registration
 *       that stands by {@link Interest#merge} (the device's newest connection, on any gateway);</li>
 *   <li>{@value #BY_GATEWAY}: gateway, conv, device → the newest registration <em>that gateway</em>
 *       reported online and has not withdrawn: what the gateway believes it holds here (a device's
 *       old socket on another gateway stays in it until that gateway withdraws it);</li>
 *   <li>{@value #DIGESTS} (in memory, not logged: recounted from {@value #BY_GATEWAY} the first
 *       time a gateway is seen after a start, so a registration costs no changelog record here):
 *       gateway → its generation, the count and the sum of {@link InterestDigest#term}s of its
 *       {@value #BY_GATEWAY} entries, kept up to date with every registration (O(1)), and how many
 *       digests in a row disagreed.</li>
 * </ul>
 * A gateway writes its own digest of the same set to the partition every
 * {@code IM_INTEREST_RENEW_MS}, after every registration it wrote before (one producer, one
 * partition: in order). Equal digests mean both sides hold the same set, so nothing is renewed.
 * Two digests in a row that disagree mean a registration or withdrawal was lost (a failed publish,
 * a store that lost a write): the task asks the gateway on its channel ({@link ChannelRecord.Resync})
 * to write the partition's registrations again, followed by a digest with {@code since}; an online
 * registration of that gateway not written again since then is one the gateway no longer holds
 * and is withdrawn. The digest is recomputed from the store at that point, so any drift heals.
 */
public final class InterestLedger {
    public static final String BY_GATEWAY = "interest-by-gateway";
    public static final String DIGESTS = "interest-digests";
    private static final StringSerializer KEY_SER = new StringSerializer();

    private final KeyValueStore<String, String> routes;
    private final KeyValueStore<String, String> byGateway;
    private final KeyValueStore<String, String> digests;
    /** A task asks a gateway for a partition again only after this long without an answer. */
    private final long askAgainAfter;

    public InterestLedger(KeyValueStore<String, String> routes, KeyValueStore<String, String> byGateway,
                          KeyValueStore<String, String> digests, long askAgainAfter) {
        this.routes = routes;
        this.byGateway = byGateway;
        this.digests = digests;
        this.askAgainAfter = askAgainAfter;
    }

    /** The ledger over the routing store {@code routesStore} and the two stores {@link #addStores} connected. */
    public static InterestLedger of(ProcessorContext<?, ?> context, String routesStore, long askAgainAfter) {
        return new InterestLedger(context.getStateStore(routesStore), context.getStateStore(BY_GATEWAY),
                context.getStateStore(DIGESTS), askAgainAfter);
    }

    /** Adds the ledger's two stores ({@value #BY_GATEWAY} persistent and logged, {@value #DIGESTS} in memory) and connects them to {@code processors}. */
    public static void addStores(Topology t, String... processors) {
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(BY_GATEWAY), Serdes.String(), Serdes.String()), processors);
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(DIGESTS), Serdes.String(), Serdes.String())
                .withLoggingDisabled(), processors);
    }

    /** A registration that changed the routing view: what stood before (may be null) and what stands now. */
    public record Change(String pair, Interest before, Interest after) {}

    /**
     * Applies a registration (or withdrawal) of {@code conv}: the routing view by
     * {@link Interest#merge}, and the reporting gateway's own set and digest.
     *
     * @return the change of the routing view, or null if it stands as it was
     */
    public Change apply(String conv, InterestRecord rec) {
        Interest in = rec.interest();
        account(conv, rec.device(), in);
        String pair = PairKey.of(conv, rec.device());
        Interest before = Interest.fromStoreJson(routes.get(pair));
        Interest after = Interest.merge(before, in);
        if (after.equals(before)) return null;
        routes.put(pair, after.toStoreJson());
        return new Change(pair, before, after);
    }

    /** What the outcome of a digest asks of the caller. */
    public record Outcome(ChannelRecord.Resync ask, List<Change> withdrawn) {
        static final Outcome NOTHING = new Outcome(null, List.of());
    }

    /** The record that carries {@code ask} to {@code gateway}'s channel (the topologies' sinks route by its header). */
    public static Record<String, String> request(TopicNames topics, String gateway, ChannelRecord.Resync ask, long timestamp) {
        Record<String, String> out = new Record<>(gateway, ask.toJson(), timestamp);
        out.headers().add(RouteJson.DEST_HEADER, topics.channel(gateway).getBytes(StandardCharsets.UTF_8));
        return out;
    }

    /**
     * Compares a gateway's digest with this task's. Returns the request to send to the gateway's
     * channel (when two digests in a row disagreed), and, for a digest that ends a re-send, the
     * registrations withdrawn because the gateway no longer holds them.
     */
    public Outcome digest(InterestDigest d, long now) {
        Sum mine = sum(d.gateway(), d.gen());
        if (mine == null) return Outcome.NOTHING;   // an older generation: its registrations are garbage
        if (d.since() >= 0) {
            List<Change> withdrawn = dropNotResent(d);
            mine = recount(d.gateway(), d.gen());
            mine.misses = d.agrees(mine.count(), mine.sum()) ? 0 : 1;
            mine.asked = 0;
            digests.put(d.gateway(), mine.encode());
            return new Outcome(null, withdrawn);
        }
        if (d.agrees(mine.count(), mine.sum())) {
            if (mine.misses != 0) {
                mine.misses = 0;
                digests.put(d.gateway(), mine.encode());
            }
            return Outcome.NOTHING;
        }
        mine.misses++;
        ChannelRecord.Resync ask = null;
        if (mine.misses >= 2 && (mine.asked == 0 || now - mine.asked >= askAgainAfter)) {
            mine.asked = now;
            ask = new ChannelRecord.Resync(d.partition(), d.gen());
        }
        digests.put(d.gateway(), mine.encode());
        return new Outcome(ask, List.of());
    }

    // ---- the gateway's own set

    /** Keeps {@value #BY_GATEWAY} and the digest equal to "what the gateway reported online and has not withdrawn". */
    private void account(String conv, String device, Interest in) {
        Sum sum = sum(in.gateway(), in.gen());
        if (sum == null) return;
        String key = gatewayKey(in.gateway(), conv, device);
        Interest held = Interest.fromStoreJson(byGateway.get(key));
        if (held != null && held.gen() != in.gen()) held = null;   // of an older generation: not in the digest
        if (in.online()) {
            if (held != null && held.ver() > in.ver()) return;
            if (held != null && held.ver() == in.ver()) {
                if (in.at() > held.at()) byGateway.put(key, in.toStoreJson());   // written again (a re-send): its time only
                return;
            }
            if (held != null) sum.remove(InterestDigest.term(conv, device, held.ver()));
            sum.add(InterestDigest.term(conv, device, in.ver()));
            byGateway.put(key, in.toStoreJson());
        } else {
            if (held == null || held.ver() != in.ver()) return;
            sum.remove(InterestDigest.term(conv, device, held.ver()));
            byGateway.delete(key);
        }
        digests.put(in.gateway(), sum.encode());
    }

    /**
     * The digest entry of the gateway for generation {@code gen}: a fresh one (and the older
     * generation's set dropped) when {@code gen} is newer than the stored one, null when older.
     */
    private Sum sum(String gateway, long gen) {
        Sum s = Sum.decode(digests.get(gateway));
        if (s == null) s = recount(gateway, gen);   // first seen since this task started: from the logged entries
        if (s.gen > gen) return null;
        if (s.gen == gen) return s;
        if (s != null) {
            List<String> old = new ArrayList<>();
            try (KeyValueIterator<String, String> it = byGateway.prefixScan(gatewayPrefix(gateway), KEY_SER)) {
                while (it.hasNext()) old.add(it.next().key);
            }
            old.forEach(byGateway::delete);
        }
        Sum fresh = new Sum(gen);
        digests.put(gateway, fresh.encode());
        return fresh;
    }

    /** End of a re-send: the gateway's online registrations not written since {@code d.since()} are gone. */
    private List<Change> dropNotResent(InterestDigest d) {
        List<KeyValue<String, Interest>> stale = new ArrayList<>();
        try (KeyValueIterator<String, String> it = byGateway.prefixScan(gatewayPrefix(d.gateway()), KEY_SER)) {
            while (it.hasNext()) {
                KeyValue<String, String> kv = it.next();
                Interest held = Interest.fromStoreJson(kv.value);
                if (held.gen() == d.gen() && held.at() < d.since()) stale.add(KeyValue.pair(kv.key, held));
            }
        }
        List<Change> withdrawn = new ArrayList<>();
        for (KeyValue<String, Interest> s : stale) {
            byGateway.delete(s.key);
            String pair = s.key.substring(gatewayPrefix(d.gateway()).length());
            Interest before = Interest.fromStoreJson(routes.get(pair));
            Interest held = s.value;
            if (before != null && before.online() && before.gateway().equals(held.gateway()) && before.gen() == held.gen()
                    && before.ver() == held.ver()) {
                Interest after = new Interest(before.user(), before.gateway(), before.gen(), before.ver(), false, d.since());
                routes.put(pair, after.toStoreJson());
                withdrawn.add(new Change(pair, before, after));
            }
        }
        return withdrawn;
    }

    /**
     * The gateway's digest recomputed from its {@value #BY_GATEWAY} entries of generation
     * {@code gen}, or of the newest generation found there if that is newer (stored, so that an
     * older generation's records are recognised as such).
     */
    private Sum recount(String gateway, long gen) {
        String prefix = gatewayPrefix(gateway);
        List<KeyValue<String, Interest>> held = new ArrayList<>();
        long newest = gen;
        try (KeyValueIterator<String, String> it = byGateway.prefixScan(prefix, KEY_SER)) {
            while (it.hasNext()) {
                KeyValue<String, String> kv = it.next();
                Interest h = Interest.fromStoreJson(kv.value);
                newest = Math.max(newest, h.gen());
                held.add(KeyValue.pair(kv.key.substring(prefix.length()), h));
            }
        }
        Sum s = new Sum(newest);
        for (KeyValue<String, Interest> h : held) {
            if (h.value.gen() == newest) s.add(InterestDigest.term(PairKey.conv(h.key), PairKey.second(h.key), h.value.ver()));
        }
        digests.put(gateway, s.encode());
        return s;
    }

    /**
     * Removes what a gateway that is gone for good left in {@value #BY_GATEWAY} and
     * {@value #DIGESTS} (the routing view's entries are removed by the caller's garbage rule).
     */
    public void forget(String gateway) {
        List<String> keys = new ArrayList<>();
        try (KeyValueIterator<String, String> it = byGateway.prefixScan(gatewayPrefix(gateway), KEY_SER)) {
            while (it.hasNext()) keys.add(it.next().key);
        }
        keys.forEach(byGateway::delete);
        digests.delete(gateway);
    }

    /** The gateways this task holds a digest for. */
    public List<String> gateways() {
        List<String> out = new ArrayList<>();
        try (KeyValueIterator<String, String> it = digests.all()) {
            while (it.hasNext()) out.add(it.next().key);
        }
        return out;
    }

    private static String gatewayPrefix(String gateway) {
        return gateway + PairKey.SEP;
    }

    private static String gatewayKey(String gateway, String conv, String device) {
        return gatewayPrefix(gateway) + PairKey.of(conv, device);
    }

    /** A digest entry: generation, count, sum, digests in a row that disagreed, when a re-send was last asked for. */
    private static final class Sum extends InterestDigest.Tally {
        final long gen;
        int misses;
        long asked;

        Sum(long gen) {
            this.gen = gen;
        }

        String encode() {
            return gen + ":" + count() + ":" + sum() + ":" + misses + ":" + asked;
        }

        static Sum decode(String s) {
            if (s == null) return null;
            String[] p = s.split(":");
            if (p.length != 5) throw new IllegalStateException("routing state: not a digest entry: '" + s + "'");
            Sum d = new Sum(Long.parseLong(p[0]));
            d.set(Long.parseLong(p[1]), Long.parseLong(p[2]));
            d.misses = Integer.parseInt(p[3]);
            d.asked = Long.parseLong(p[4]);
            return d;
        }
    }
}
