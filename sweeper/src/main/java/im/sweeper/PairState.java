package im.sweeper;

import com.fasterxml.jackson.databind.JsonNode;
import im.topics.RouteJson;

/**
 * The per-(conversation, device) values of the sweeper's state stores, as compact JSON (no
 * {@code v}: internal state, like the delivery app's changelogs). Keys are
 * {@code conv + "\u0000" + device} so that all pairs of one conversation are one prefix range.
 */
final class PairState {
    /** Separates conversation and device in a pair key; conversation ids never contain it. */
    static final char SEP = '\u0000';

    private PairState() {}

    static String key(String conv, String device) {
        return conv + SEP + device;
    }

    /** The prefix of every pair key of a conversation, for {@code prefixScan}. */
    static String prefix(String conv) {
        return conv + SEP;
    }

    static String conv(String key) {
        return key.substring(0, key.indexOf(SEP));
    }

    static String device(String key) {
        return key.substring(key.indexOf(SEP) + 1);
    }

    /** A field of a stored value; only this class writes them, so a missing one is a bug, never 0. */
    private static long number(JsonNode n, String f) {
        JsonNode v = n.get(f);
        if (v == null || !v.isIntegralNumber()) throw new IllegalStateException("sweeper state: no integer '" + f + "' in " + n);
        return v.longValue();
    }

    /** A device's merged cursor in a conversation: the max {@code delivered} of its latest install epoch. */
    record Cursor(long epoch, long delivered) {
        static Cursor fromJson(String json) {
            JsonNode n = RouteJson.parse(json);
            return new Cursor(number(n, "epoch"), number(n, "delivered"));
        }

        String toJson() {
            return RouteJson.JSON.createObjectNode().put("epoch", epoch).put("delivered", delivered).toString();
        }

        /**
         * This cursor merged with a newer record: a higher epoch starts over (a reinstall), the same
         * epoch keeps the max (duplicates and replays), a lower epoch is a stale record and ignored.
         */
        Cursor merge(long otherEpoch, long otherDelivered) {
            if (otherEpoch > epoch) return new Cursor(otherEpoch, otherDelivered);
            if (otherEpoch == epoch && otherDelivered > delivered) return new Cursor(epoch, otherDelivered);
            return this;
        }
    }

    /** An online pair whose cursor is behind the head: since when, and when it was last hinted (-1: never). */
    record Lag(long since, long lastHint) {
        static final long NEVER = -1;

        static Lag since(long now) {
            return new Lag(now, NEVER);
        }

        static Lag fromJson(String json) {
            JsonNode n = RouteJson.parse(json);
            return new Lag(number(n, "since"), number(n, "lastHint"));
        }

        String toJson() {
            return RouteJson.JSON.createObjectNode().put("since", since).put("lastHint", lastHint).toString();
        }

        /** Due for a hint: lagging for at least {@code sweep}, and not hinted within {@code backoff}. */
        boolean due(long now, long sweep, long backoff) {
            return now - since >= sweep && (lastHint == NEVER || now - lastHint >= backoff);
        }

        Lag hinted(long now) {
            return new Lag(since, now);
        }
    }
}
