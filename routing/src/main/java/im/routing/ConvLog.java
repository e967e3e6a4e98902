package im.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.topics.RouteJson;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the conversation's own log says about it, folded in seq order: the highest seq applied
 * (CDC duplicates and replays are recognised by it) and each user's latest visibility period,
 * from the {@code join} and {@code leave} events that sit in the same partition as the messages.
 * The delivery node and the sweeper both decide "may this user see seq s" from this, never from
 * interest records, so a routing record that arrives late or out of order cannot widen anyone's
 * visibility. Periods follow the directory's rule: a member sees events from their join through
 * their leave, both included. Only the latest period per user is kept: the log is applied in seq
 * order, so an earlier period can never matter again for what is routed or hinted next.
 *
 * <p>Head and periods live in one value, so a state store never holds one updated without the
 * other (a crash between two store writes could otherwise skip a replayed event's membership).
 */
public final class ConvLog {
    /** Marks a period that has not ended. */
    public static final long OPEN = Long.MAX_VALUE;

    /** One visibility period: seqs {@code from..until}, both included. */
    public record Period(long from, long until) {
        public boolean covers(long seq) {
            return from <= seq && seq <= until;
        }

        public boolean open() {
            return until == OPEN;
        }
    }

    private long head;
    private final Map<String, Period> periods;

    private ConvLog(long head, Map<String, Period> periods) {
        this.head = head;
        this.periods = periods;
    }

    public static ConvLog empty() {
        return new ConvLog(0, new TreeMap<>());
    }

    /** Applies one event of the log; false (and nothing changes) for a seq at or below the head. */
    public boolean apply(long seq, String kind, String user) {
        if (seq <= head) return false;
        head = seq;
        if ("join".equals(kind)) {
            periods.put(user, new Period(seq, OPEN));
        } else if ("leave".equals(kind)) {
            Period p = periods.get(user);
            periods.put(user, new Period(p == null ? seq : p.from(), seq));
        }
        return true;
    }

    public long head() {
        return head;
    }

    /** Whether the user may see this seq (per the latest period the log has shown so far). */
    public boolean visible(String user, long seq) {
        Period p = periods.get(user);
        return p != null && p.covers(seq);
    }

    /** The first seq of the user's latest period, or 0 if they never had one. */
    public long periodStart(String user) {
        Period p = periods.get(user);
        return p == null ? 0 : p.from();
    }

    /** The user is a member now (their latest period has not ended). */
    public boolean member(String user) {
        Period p = periods.get(user);
        return p != null && p.open();
    }

    /**
     * The highest seq this user may see: the head for a member, the leave's seq for a former
     * member, 0 for someone who never was one. A device is behind when its cursor is below it.
     */
    public long visibleHead(String user) {
        Period p = periods.get(user);
        if (p == null) return 0;
        return p.open() ? head : Math.min(p.until(), head);
    }

    public static ConvLog fromJson(String json) {
        if (json == null) return empty();
        JsonNode n = RouteJson.parse(json);
        Map<String, Period> m = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = n.get("periods").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode p = e.getValue();
            m.put(e.getKey(), new Period(p.get("from").asLong(), p.has("until") ? p.get("until").asLong() : OPEN));
        }
        return new ConvLog(n.get("head").asLong(), m);
    }

    public String toJson() {
        ObjectNode o = RouteJson.JSON.createObjectNode().put("head", head);
        ObjectNode ps = o.putObject("periods");
        periods.forEach((u, p) -> {
            ObjectNode po = ps.putObject(u).put("from", p.from());
            if (!p.open()) po.put("until", p.until());
        });
        return o.toString();
    }
}
