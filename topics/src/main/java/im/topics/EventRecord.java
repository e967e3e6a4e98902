package im.topics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.protocol.Event;
import java.util.Set;

/**
 * One committed row of {@code events} as the CDC relay publishes it on {@code <prefix>events}
 * (the public contract of docs/topics.md, {@code v:1}), and as the delivery nodes embed it in
 * channel records and notices. Every field is always present; {@code device} and {@code cmid}
 * hold JSON null when absent ({@code cmid} is non-null exactly for {@code msg}, as the table's
 * constraint says); {@code body} is {@code ""} for join/leave.
 */
public record EventRecord(String conv, long seq, String kind, String mid, String sender, String device,
                          String cmid, String body, long at) {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = 1;
    static final Set<String> KINDS = Set.of(Event.MSG, Event.JOIN, Event.LEAVE);
    private static final String RECORD = "event record";

    /** Only {@code device} and {@code cmid} may be null. */
    public EventRecord {
        if (conv == null || kind == null || mid == null || sender == null || body == null) {
            throw new NullPointerException("event record: conv, kind, mid, sender and body are required, got " + conv
                    + ", " + kind + ", " + mid + ", " + sender + ", " + (body == null ? null : "a body"));
        }
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    public static EventRecord read(String json) {
        return read(Fields.parse(RECORD, json));
    }

    /** Reads an event embedded in another record (channel record, notice). */
    public static EventRecord read(JsonNode node) {
        return read(Fields.of(RECORD, node));
    }

    private static EventRecord read(Fields f) {
        f.version(VERSION);
        EventRecord e = new EventRecord(f.id("conv"), f.integral("seq"), f.oneOf("kind", KINDS), f.id("mid"), f.id("sender"),
                f.nullableText("device"), f.nullableText("cmid"), f.text("body"), f.integral("at"));
        if (e.seq < 1) throw new MalformedRecordException(RECORD, "field 'seq' must be at least 1, got " + e.seq);
        if (e.isMsg() != (e.cmid != null)) {
            throw new MalformedRecordException(RECORD, "field 'cmid' must be " + (e.isMsg() ? "a string for msg" : "null for " + e.kind));
        }
        return e;
    }

    public boolean isMsg() {
        return Event.MSG.equals(kind);
    }

    /** A membership change: join or leave. */
    public boolean isMembership() {
        return Event.JOIN.equals(kind) || Event.LEAVE.equals(kind);
    }

    /** The record value, fields in the documented order. */
    public ObjectNode toJsonNode() {
        return RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("seq", seq).put("kind", kind)
                .put("mid", mid).put("sender", sender).put("device", device).put("cmid", cmid).put("body", body).put("at", at);
    }

    public String toJson() {
        return toJsonNode().toString();
    }

    /** The WebSocket {@code event} frame's record: the same fields without {@code v} and {@code device}. */
    public Event toWire() {
        return new Event(conv, seq, kind, mid, sender, cmid, body, at);
    }
}
