package im.examples;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One event of a conversation's log, as documented in docs/topics.md ({@code <prefix>events},
 * schema version 1). The same shape is read from the topic and from PostgreSQL's {@code events}
 * table, so the two can be compared field by field.
 *
 * @param device null for join/leave
 * @param cmid   null for join/leave
 * @param at     the row's created_at in epoch milliseconds (microseconds truncated)
 * @param users  a bulk join's users (its {@code users} array, column {@code events.users}); null
 *               for every other event
 * @param ref    an edit's or a recall's {@code ref}, the seq of the message it changes (column
 *               {@code ref_seq}); 0 for every other event
 * @param recalledBy PostgreSQL only ({@code recalled_by}; the topic never carries it, so 0 there,
 *               and it is not compared): the seq of the recall that emptied this message or edit
 */
public record Event(String conv, long seq, String kind, String mid, String sender, String device,
                    String cmid, String body, long at, List<String> users, long ref, long recalledBy) {

    /** An event without a users list: a message, or a join or leave of one user. */
    public Event(String conv, long seq, String kind, String mid, String sender, String device, String cmid, String body, long at) {
        this(conv, seq, kind, mid, sender, device, cmid, body, at, null);
    }

    /** An event that is neither an edit nor a recall, as the topic has it. */
    public Event(String conv, long seq, String kind, String mid, String sender, String device, String cmid, String body, long at,
                 List<String> users) {
        this(conv, seq, kind, mid, sender, device, cmid, body, at, users, 0, 0);
    }

    /** Whether PostgreSQL shows this message or edit emptied by a recall. */
    public boolean recalled() {
        return recalledBy > 0;
    }

    /** The schema version this reader understands. */
    public static final int VERSION = 1;

    /** The fields in the order the relay writes them; every one is always present. */
    public static final List<String> FIELDS =
            List.of("v", "conv", "seq", "kind", "mid", "sender", "device", "cmid", "body", "at");

    /** A record that does not follow the documented schema. */
    public static final class BadRecordException extends Exception {
        private static final long serialVersionUID = 1L;

        BadRecordException(String message) {
            super(message);
        }
    }

    /**
     * Parses a record value strictly: every documented field must be present with its type, and
     * {@code conv} must equal the record key. Unknown fields are ignored (adding a field does not
     * change {@code v}); an unknown {@code kind} is accepted (new kinds are additive too).
     */
    public static Event fromJson(String key, JsonNode v) throws BadRecordException {
        if (v == null || !v.isObject()) throw new BadRecordException("value is not a JSON object");
        JsonNode version = v.get("v");
        if (version == null || !version.isInt()) throw new BadRecordException("no integer field v");
        if (version.intValue() != VERSION) {
            throw new BadRecordException("schema version v=" + version.intValue() + ", this reader knows v=" + VERSION);
        }
        for (String f : FIELDS) {
            if (!v.has(f)) throw new BadRecordException("field " + f + " is absent");
        }
        String conv = text(v, "conv", false);
        if (!conv.equals(key)) throw new BadRecordException("key " + quote(key) + " differs from conv " + quote(conv));
        long seq = integer(v, "seq");
        if (seq < 1) throw new BadRecordException("seq " + seq + " is below 1");
        return new Event(conv, seq, text(v, "kind", false), text(v, "mid", false), text(v, "sender", false),
                text(v, "device", true), text(v, "cmid", true), text(v, "body", false), integer(v, "at"), users(v), ref(v, seq), 0);
    }

    /** The {@code ref} of an edit or a recall (absent: 0); at least 1 and below {@code seq} when present. */
    private static long ref(JsonNode v, long seq) throws BadRecordException {
        if (!v.has("ref")) return 0;
        long ref = integer(v, "ref");
        if (ref < 1 || ref >= seq) throw new BadRecordException("ref " + ref + " is not a seq from 1 to below seq " + seq);
        return ref;
    }

    /** The optional {@code users} array of a bulk join (absent or null: none); its {@code count} is its length. */
    private static List<String> users(JsonNode v) throws BadRecordException {
        JsonNode n = v.get("users");
        if (n == null || n.isNull()) return null;
        if (!n.isArray()) throw new BadRecordException("field users is " + n.getNodeType().toString().toLowerCase() + ", expected an array");
        List<String> out = new ArrayList<>(n.size());
        for (JsonNode u : n) {
            if (!u.isTextual()) throw new BadRecordException("field users holds a " + u.getNodeType().toString().toLowerCase() + ", expected strings");
            out.add(u.textValue());
        }
        JsonNode count = v.get("count");
        if (count == null || !count.isInt() || count.intValue() != out.size()) {
            throw new BadRecordException("field count is " + count + ", expected the " + out.size() + " users listed");
        }
        return List.copyOf(out);
    }

    /** The names of the fields in which this event and {@code other} differ, in schema order. */
    public List<String> differences(Event other) {
        List<String> out = new ArrayList<>();
        if (!conv.equals(other.conv)) out.add("conv");
        if (seq != other.seq) out.add("seq");
        if (!kind.equals(other.kind)) out.add("kind");
        if (!mid.equals(other.mid)) out.add("mid");
        if (!sender.equals(other.sender)) out.add("sender");
        if (!Objects.equals(device, other.device)) out.add("device");
        if (!Objects.equals(cmid, other.cmid)) out.add("cmid");
        if (!body.equals(other.body)) out.add("body");
        if (at != other.at) out.add("at");
        if (ref != other.ref) out.add("ref");
        if (!Objects.equals(users, other.users)) out.add("users");
        return out;
    }

    /** A field's value for reports: strings quoted and shortened, null as {@code null}. */
    public String show(String field) {
        return switch (field) {
            case "conv" -> quote(conv);
            case "seq" -> Long.toString(seq);
            case "kind" -> quote(kind);
            case "mid" -> quote(mid);
            case "sender" -> quote(sender);
            case "device" -> quote(device);
            case "cmid" -> quote(cmid);
            case "body" -> quote(body);
            case "at" -> Long.toString(at);
            case "ref" -> Long.toString(ref);
            case "users" -> users == null ? "null" : users.size() + " users " + quote(String.join(",", users));
            default -> throw new IllegalArgumentException("no field " + field);
        };
    }

    /** A one-line summary: kind, sender and mid (and the seq an edit or a recall changes). */
    public String summary() {
        return kind + (ref > 0 ? " of seq " + ref : "") + " by " + sender + ", mid " + mid;
    }

    static String quote(String s) {
        if (s == null) return "null";
        String shown = s.length() > 60 ? s.substring(0, 57) + "..." : s;
        return '"' + shown.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + '"';
    }

    private static String text(JsonNode v, String field, boolean nullable) throws BadRecordException {
        JsonNode n = v.get(field);
        if (n.isNull() && nullable) return null;
        if (!n.isTextual()) {
            throw new BadRecordException("field " + field + " is " + n.getNodeType().toString().toLowerCase()
                    + ", expected a string" + (nullable ? " or null" : ""));
        }
        return n.textValue();
    }

    private static long integer(JsonNode v, String field) throws BadRecordException {
        JsonNode n = v.get(field);
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new BadRecordException("field " + field + " is " + n.getNodeType().toString().toLowerCase()
                    + ", expected an int64");
        }
        return n.longValue();
    }
}
