package im.sweeper;

import com.fasterxml.jackson.databind.JsonNode;
import im.topics.Cursor;
import im.topics.RouteJson;

/**
 * The per-(conversation, device) values of the sweeper's state stores, as compact JSON (no
 * {@code v}: internal state, like the delivery app's changelogs), keyed by
 * {@link im.topics.PairKey} so that all pairs of one conversation are one prefix range.
 */
final class PairState {
    private PairState() {}

    /** A field of a stored value; only this class writes them, so a missing one is a bug, never 0. */
    private static long number(JsonNode n, String f) {
        JsonNode v = n.get(f);
        if (v == null || !v.isIntegralNumber()) throw new IllegalStateException("sweeper state: no integer '" + f + "' in " + n);
        return v.longValue();
    }

    /** A device's merged cursor in a conversation ({@link Cursor}: the max {@code delivered} of its latest install epoch), from its store form. */
    static Cursor cursor(String json) {
        JsonNode n = RouteJson.parse(json);
        return new Cursor(number(n, "epoch"), number(n, "delivered"));
    }

    /** The store form of a cursor. */
    static String json(Cursor c) {
        return RouteJson.JSON.createObjectNode().put("epoch", c.epoch()).put("delivered", c.delivered()).toString();
    }

    /**
     * An online pair whose cursor is behind the head its user may see: {@code mark} is that head
     * when the spell was (re)started at {@code since}; {@code lastHint} when it was last hinted (-1:
     * never) and {@code hints} how often in this spell. A device that keeps up holds {@code mark}
     * soon after {@code since} (within its ack throttle) and the spell restarts from the then head,
     * so it never becomes due; one that lost a push never reaches {@code mark} and is due
     * {@code sweep} after {@code since}. Within one spell the back-off doubles with every hint, up
     * to {@link #MAX_BACKOFF_FACTOR} times the configured one: a device that is busy catching up (or
     * whose hints are lost) is reminded, but not every back-off period.
     */
    record Lag(long mark, long since, long lastHint, int hints) {
        static final long NEVER = -1;
        /** The back-off within a spell grows to at most this many times {@code IM_HINT_BACKOFF_MS}. */
        static final int MAX_BACKOFF_FACTOR = 16;

        /** A new spell from {@code since} to hold {@code mark}, keeping the last hint's time (the back-off spans spells). */
        static Lag spell(long mark, long since, long lastHint) {
            return new Lag(mark, since, lastHint, 0);
        }

        static Lag fromJson(String json) {
            JsonNode n = RouteJson.parse(json);
            return new Lag(number(n, "mark"), number(n, "since"), number(n, "lastHint"), (int) number(n, "hints"));
        }

        String toJson() {
            return RouteJson.JSON.createObjectNode().put("mark", mark).put("since", since).put("lastHint", lastHint)
                    .put("hints", hints).toString();
        }

        /**
         * Due for a hint: {@code mark} not held for at least {@code sweep}, and not hinted within the
         * back-off ({@code backoff} doubled per hint of this spell, at most {@link #MAX_BACKOFF_FACTOR} times).
         */
        boolean due(long now, long sweep, long backoff) {
            if (now - since < sweep) return false;
            if (lastHint == NEVER) return true;
            long factor = 1L << Math.min(Math.max(hints - 1, 0), Integer.numberOfTrailingZeros(MAX_BACKOFF_FACTOR));
            return now - lastHint >= backoff * factor;
        }

        Lag hinted(long now) {
            return new Lag(mark, since, now, hints + 1);
        }
    }
}
