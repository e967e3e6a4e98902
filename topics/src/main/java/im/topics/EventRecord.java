package im.topics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import im.protocol.Event;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One committed row of {@code events} as the CDC relay publishes it on {@code <prefix>events}
 * (the public contract of docs/topics.md, {@code v:1}), and as the delivery nodes embed it in
 * channel records and notices. Every field is always present; {@code device} and {@code cmid}
 * hold JSON null when absent ({@code cmid} is non-null exactly for {@code msg}, as the table's
 * constraint says); {@code body} is {@code ""} for join/leave.
 *
 * <p>A <em>bulk join</em> (one event that adds several users at once) also has {@code count}, the
 * number of users it adds (at least 2), and {@code users}, their ids in order ({@code sender} is
 * the first). Both are absent from every other event, so a single join or leave keeps the shape it
 * always had. On the event topic a bulk join always carries {@code users} (routing learns each added
 * user's period from it); embedded in a channel record it is {@linkplain #compact compact}: the
 * count without the list. In Java, {@code count} is 0 and {@code users} null when absent.
 *
 * <p>An <em>edit</em> or a <em>recall</em> (kinds {@code edit}, {@code recall}; sent by a device, so
 * with a {@code cmid}) also has {@code ref}, the seq of the message it changes, below its own; absent
 * (0 in Java) from every other event. An edit's body is the message's new text, a recall's is
 * {@code ""}. The message's own record keeps its body on the topic until retention removes it:
 * consumers apply a recall by dropping the body of {@code ref} (docs/topics.md).
 */
public record EventRecord(String conv, long seq, String kind, String mid, String sender, String device,
                          String cmid, String body, long at, int count, List<String> users, long ref) {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = 1;
    static final Set<String> KINDS = Set.of(Event.MSG, Event.JOIN, Event.LEAVE, Event.EDIT, Event.RECALL);
    private static final String RECORD = "event record";

    /**
     * Only {@code device}, {@code cmid} and {@code users} may be null. {@code count} is 0 (a single
     * event) or at least 2 (a bulk join); {@code users}, when given, holds exactly {@code count} ids.
     */
    public EventRecord {
        if (conv == null || kind == null || mid == null || sender == null || body == null) {
            throw new NullPointerException("event record: conv, kind, mid, sender and body are required, got " + conv
                    + ", " + kind + ", " + mid + ", " + sender + ", " + (body == null ? null : "a body"));
        }
        if (count != 0 && (count < 2 || !Event.JOIN.equals(kind))) {
            throw new IllegalArgumentException("event record: count is for a bulk join of at least 2 users, got " + kind + " of " + count);
        }
        if (users != null) {
            if (users.size() != count) throw new IllegalArgumentException("event record: " + users.size() + " users, count " + count);
            users = List.copyOf(users);
        }
        if (Event.isChange(kind) != (ref > 0) || ref >= seq && ref > 0) {
            throw new IllegalArgumentException("event record: ref " + ref + " with " + kind + " at seq " + seq);
        }
    }

    /** An event that is not an edit or a recall ({@code ref} 0). */
    public EventRecord(String conv, long seq, String kind, String mid, String sender, String device, String cmid, String body, long at,
                       int count, List<String> users) {
        this(conv, seq, kind, mid, sender, device, cmid, body, at, count, users, 0);
    }

    /** A single event (message, or a join or leave of one user): no {@code count}, no {@code users}. */
    public EventRecord(String conv, long seq, String kind, String mid, String sender, String device, String cmid, String body, long at) {
        this(conv, seq, kind, mid, sender, device, cmid, body, at, 0, null, 0);
    }

    /** Reads a value of the event topic strictly (a bulk join must list its users); throws {@link MalformedRecordException} naming the field. */
    public static EventRecord read(String json) {
        return read(Fields.parse(RECORD, json), true);
    }

    /** Reads an event embedded in another record (channel record, notice): a bulk join may be compact. */
    public static EventRecord read(JsonNode node) {
        return read(Fields.of(RECORD, node), false);
    }

    private static EventRecord read(Fields f, boolean usersRequired) {
        f.version(VERSION);
        String conv = f.id("conv");
        long seq = f.integral("seq");
        String kind = f.oneOf("kind", KINDS);
        String mid = f.id("mid");
        String sender = f.id("sender");
        String device = f.nullableText("device");
        String cmid = f.nullableText("cmid");
        String body = f.text("body");
        long at = f.integral("at");
        if (seq < 1) throw new MalformedRecordException(RECORD, "field 'seq' must be at least 1, got " + seq);
        boolean sent = Event.MSG.equals(kind) || Event.isChange(kind);
        if (sent != (cmid != null)) {
            throw new MalformedRecordException(RECORD, "field 'cmid' must be " + (sent ? "a string for " : "null for ") + kind);
        }
        long ref = f.present("ref") ? f.integral("ref") : 0;
        if (Event.isChange(kind) != f.present("ref")) {
            throw new MalformedRecordException(RECORD, "field 'ref' is " + (Event.isChange(kind) ? "required for " : "only for edit and recall, not ") + kind);
        }
        if (Event.isChange(kind) && (ref < 1 || ref >= seq)) {
            throw new MalformedRecordException(RECORD, "field 'ref' must be a seq from 1 to below the event's " + seq + ", got " + ref);
        }
        if (ref > 0) return new EventRecord(conv, seq, kind, mid, sender, device, cmid, body, at, 0, null, ref);
        int count = f.present("count") ? f.int32("count") : 0;
        List<String> users = f.present("users") ? f.ids("users") : null;
        if (count == 0 && users == null) return new EventRecord(conv, seq, kind, mid, sender, device, cmid, body, at);
        if (!Event.JOIN.equals(kind)) throw new MalformedRecordException(RECORD, "fields 'count' and 'users' are only for a bulk join, not " + kind);
        if (count < 2) throw new MalformedRecordException(RECORD, "field 'count' must be at least 2 (a bulk join), got " + count);
        if (users == null) {
            if (usersRequired) throw new MalformedRecordException(RECORD, "missing field 'users' (a bulk join of " + count + ")");
        } else {
            if (users.size() != count) {
                throw new MalformedRecordException(RECORD, "field 'users' lists " + users.size() + " users, 'count' says " + count);
            }
            if (!users.get(0).equals(sender)) throw new MalformedRecordException(RECORD, "field 'sender' must be the first of 'users'");
            Set<String> seen = new HashSet<>();
            for (String u : users) {
                if (!seen.add(u)) throw new MalformedRecordException(RECORD, "field 'users' lists '" + u + "' twice");
            }
        }
        return new EventRecord(conv, seq, kind, mid, sender, device, cmid, body, at, count, users);
    }

    /** A join that adds several users at once ({@code count} ≥ 2). */
    public boolean isBulk() {
        return count != 0;
    }

    /**
     * The users a join or leave adds or removes: {@code users} of a bulk join, else {@code sender}.
     *
     * @throws IllegalStateException for a compact bulk join (its list was left out)
     */
    public List<String> members() {
        if (!isBulk()) return List.of(sender);
        if (users == null) throw new IllegalStateException("a compact bulk join does not list its users: " + conv + " seq " + seq);
        return users;
    }

    /** This event without the list of a bulk join (its count stays), as channel records and devices get it. */
    public EventRecord compact() {
        return users == null ? this : new EventRecord(conv, seq, kind, mid, sender, device, cmid, body, at, count, null, ref);
    }

    public boolean isMsg() {
        return Event.MSG.equals(kind);
    }

    /** A membership change: join or leave. */
    public boolean isMembership() {
        return Event.JOIN.equals(kind) || Event.LEAVE.equals(kind);
    }

    /** The record value, fields in the documented order ({@code ref} only for an edit or a recall; {@code count} and {@code users} last, only for a bulk join). */
    public ObjectNode toJsonNode() {
        ObjectNode o = RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("seq", seq).put("kind", kind)
                .put("mid", mid).put("sender", sender).put("device", device).put("cmid", cmid).put("body", body).put("at", at);
        if (ref > 0) o.put("ref", ref);
        if (isBulk()) o.put("count", count);
        if (users != null) {
            ArrayNode a = o.putArray("users");
            users.forEach(a::add);
        }
        return o;
    }

    public String toJson() {
        return toJsonNode().toString();
    }

    /** The WebSocket {@code event} frame's record: the same fields without {@code v}, {@code device} and {@code users}. */
    public Event toWire() {
        return new Event(conv, seq, kind, mid, sender, cmid, body, at, count, ref, false);
    }
}
