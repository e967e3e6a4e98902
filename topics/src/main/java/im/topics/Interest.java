package im.topics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One device's registration for a conversation, as the delivery nodes and the sweeper keep it:
 * the device's user, the gateway (and its generation) that holds the connection, the connection's
 * version, whether it is online or withdrawn, and when the gateway last renewed it (gateway clock).
 *
 * <p>The one rule for "device went online / offline" ({@link #merge}): the higher connection
 * version wins; within one version (one connection) a withdrawal is final, so a late registration
 * of a connection that has closed can never override anything; a renewal of the same connection
 * only refreshes {@code at}. Versions grow with every new connection of a device, on any gateway.
 *
 * <p>A registration lives under its gateway's lease: it routes while {@link #live} (online and
 * its gateway alive per {@link Gateways}), and is removed as {@link #garbage} once its gateway has
 * restarted or been silent for far longer than the lease. Nothing is deleted merely for being
 * silent: when a frozen gateway heartbeats again, its routes are back. Registrations are not
 * renewed one by one; the gateway's {@link InterestDigest} per partition finds one that was lost
 * (or a withdrawal that was), and the partition's registrations are written again.
 */
public record Interest(String user, String gateway, long gen, long ver, boolean online, long at) {

    /** What a registration's liveness depends on: the gateways' heartbeats (kept by the Streams roles). */
    public interface Gateways {
        /** The gateway's generation {@code gen} counts as alive at {@code now}. */
        boolean alive(String gateway, long gen, long now);

        /** A heartbeat of a newer generation of this gateway has been seen: the registration is dead for good. */
        boolean restartedSince(String gateway, long gen);

        /** The newest heartbeat time of any gateway, -1 if none. */
        long newest();

        /** The time of the gateway's newest heartbeat if it is of generation {@code gen}, else -1. */
        long lastSeen(String gateway, long gen);
    }

    /** The registration that stands after {@code incoming} arrived on top of {@code current} (may be null). */
    public static Interest merge(Interest current, Interest incoming) {
        if (current == null || incoming.ver > current.ver) return incoming;
        if (incoming.ver < current.ver) return current;
        if (!current.online) return current;                  // that connection has closed: final
        if (!incoming.online) return incoming;
        return incoming.at >= current.at ? incoming : current; // a renewal
    }

    /**
     * Routable now: online and the gateway alive. Deliberately not "renewed recently": a Streams
     * task that lags behind its input (after a rebalance, say) would then judge old registrations
     * by a recent heartbeat and drop events for devices that are online. A registration its gateway
     * no longer holds costs at most a frame the gateway discards until it is garbage.
     */
    public boolean live(Gateways gateways, long now) {
        return online && gateways.alive(gateway, gen, now);
    }

    /**
     * Garbage: of an older generation of a gateway that has restarted since; a withdrawal older
     * than {@code horizon} behind the newest heartbeat of any gateway (nothing can still depend on
     * it); or a registration whose gateway has not heartbeated (nor written it) for that long: a
     * gateway gone for good. A registration of a gateway that keeps heartbeating is never garbage.
     */
    public boolean garbage(Gateways gateways, long horizon) {
        if (gateways.restartedSince(gateway, gen)) return true;
        long newest = gateways.newest();
        if (newest < 0) return false;
        long seen = online ? Math.max(at, gateways.lastSeen(gateway, gen)) : at;
        return seen < newest - horizon;
    }

    /** The compact form kept in state stores (read back by {@link #fromStoreJson}). */
    public String toStoreJson() {
        return write(RouteJson.JSON.createObjectNode()).toString();
    }

    /** Reads {@link #toStoreJson}'s form, or null for null (no stored registration). */
    public static Interest fromStoreJson(String json) {
        return json == null ? null : read(RouteJson.parse(json));
    }

    /** Writes the registration's fields into {@code o} (the store value of an interest set embeds them). */
    public ObjectNode write(ObjectNode o) {
        return o.put("user", user).put("gateway", gateway).put("gen", gen).put("ver", ver).put("online", online).put("at", at);
    }

    /**
     * Reads the stored form (the fields of {@link #write}, no {@code v}); throws
     * {@link MalformedRecordException} naming the field when one is missing or of the wrong type,
     * so a malformed value is refused, never read as 0. Topic records: {@link InterestRecord#read}.
     */
    public static Interest read(JsonNode n) {
        return read(Fields.of("interest", n));
    }

    static Interest read(Fields f) {
        return new Interest(f.id("user"), f.id("gateway"), f.integral("gen"), f.integral("ver"), f.bool("online"), f.integral("at"));
    }
}
