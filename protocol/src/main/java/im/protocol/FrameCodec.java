package im.protocol;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The one codec of the wire protocol: JSON text frames with a {@code "t"} type field.
 * {@link #decodeClient} is strict (the server's input is hostile): it parses to a
 * tree under tight {@link StreamReadConstraints}, then checks every field's presence,
 * JSON type, range and pattern, rejects unknown fields and duplicate keys, and throws
 * {@link ProtocolException} with the matching {@link ErrorCode} and, when readable,
 * the request's rid. {@link #decodeServer} (for clients) checks types but ignores
 * unknown fields, so old clients survive new server fields. Encoding is compact JSON
 * with {@code t} first and nulls omitted. Immutable and thread-safe: share one instance.
 */
public final class FrameCodec {
    private static final Set<String> AUTH_FIELDS = Set.of("t", "rid", "token");
    private static final Set<String> SEND_FIELDS = Set.of("t", "rid", "conv", "cmid", "body");
    private static final Set<String> EDIT_FIELDS = Set.of("t", "rid", "conv", "cmid", "seq", "body");
    private static final Set<String> RECALL_FIELDS = Set.of("t", "rid", "conv", "cmid", "seq");
    private static final Set<String> ACK_FIELDS = Set.of("t", "rid", "conv", "seq");
    private static final Set<String> READ_FIELDS = ACK_FIELDS;
    private static final Set<String> TYPING_FIELDS = Set.of("t", "rid", "conv");
    private static final Set<String> RECEIPTS_FIELDS = Set.of("t", "rid", "conv", "seqs");
    private static final Set<String> SUB_FIELDS = Set.of("t", "rid", "after", "limit");
    private static final Set<String> CATCHUP_FIELDS = Set.of("t", "rid", "after", "limit");
    private static final Set<String> SYNC_FIELDS = Set.of("t", "rid", "conv", "after", "limit");

    /** Longer numbers cannot be a valid value anyway; 64 digits still lets "overflows long" be reported as BAD_FIELD. */
    private static final int MAX_NUMBER_CHARS = 64;
    /** Server frames are produced by our server; a generous depth leaves room for future fields. */
    private static final int SERVER_MAX_JSON_DEPTH = 64;

    private final ObjectMapper clientMapper;
    private final ObjectMapper serverMapper;

    public FrameCodec() {
        this.clientMapper = mapper(StreamReadConstraints.builder()
                .maxNestingDepth(Limits.MAX_JSON_DEPTH)
                .maxStringLength(Limits.MAX_FRAME_BYTES)
                .maxNameLength(Limits.MAX_FRAME_BYTES)
                .maxNumberLength(MAX_NUMBER_CHARS)
                .build());
        // A synced page may hold SYNC_MAX_LIMIT bodies, so server frames keep Jackson's default string/document limits.
        this.serverMapper = mapper(StreamReadConstraints.builder()
                .maxNestingDepth(SERVER_MAX_JSON_DEPTH)
                .maxNumberLength(MAX_NUMBER_CHARS)
                .build());
    }

    private static ObjectMapper mapper(StreamReadConstraints constraints) {
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(constraints)
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
        return JsonMapper.builder(factory)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .build();
    }

    // ------------------------------------------------------------------ client frames

    /**
     * Decodes a frame received from a device.
     *
     * @throws ProtocolException with the code for the first problem found
     */
    public ClientFrame decodeClient(String text) {
        // chars <= UTF-8 bytes, so the cheap length test can only reject frames that are too large.
        if (text != null && (text.length() > Limits.MAX_FRAME_BYTES || Limits.utf8Length(text) > Limits.MAX_FRAME_BYTES)) {
            throw new ProtocolException(ErrorCode.FRAME_TOO_LARGE, null,
                    "frame: must be at most " + Limits.MAX_FRAME_BYTES + " UTF-8 bytes");
        }
        Envelope env = open(clientMapper, text);
        Fields f = env.fields();
        ClientFrame frame;
        Set<String> allowed;
        switch (env.type()) {
            case "auth":
                frame = new Auth(f.id("rid"), f.token("token"));
                allowed = AUTH_FIELDS;
                break;
            case "send":
                frame = new Send(f.id("rid"), f.id("conv"), f.id("cmid"), f.body("body"));
                allowed = SEND_FIELDS;
                break;
            case "edit":
                frame = new Edit(f.id("rid"), f.id("conv"), f.id("cmid"), f.messageSeq("seq"), f.body("body"));
                allowed = EDIT_FIELDS;
                break;
            case "recall":
                frame = new Recall(f.id("rid"), f.id("conv"), f.id("cmid"), f.messageSeq("seq"));
                allowed = RECALL_FIELDS;
                break;
            case "ack":
                frame = new Ack(f.id("rid"), f.id("conv"), f.seq("seq"));
                allowed = ACK_FIELDS;
                break;
            case "read":
                frame = new Read(f.id("rid"), f.id("conv"), f.seq("seq"));
                allowed = READ_FIELDS;
                break;
            case "typing":
                frame = new Typing(f.id("rid"), f.id("conv"));
                allowed = TYPING_FIELDS;
                break;
            case "receipts":
                frame = new Receipts(f.id("rid"), f.id("conv"), f.messageSeqs("seqs", Limits.RECEIPTS_MAX_SEQS));
                allowed = RECEIPTS_FIELDS;
                break;
            case "sub":
                frame = new Sub(f.id("rid"), f.optionalId("after"),
                        f.optionalInt("limit", 1, Limits.SUB_MAX_LIMIT, Limits.SUB_DEFAULT_LIMIT));
                allowed = SUB_FIELDS;
                break;
            case "catchup":
                frame = new CatchUp(f.id("rid"), f.optionalPosition("after"),
                        f.optionalInt("limit", 1, Limits.CATCHUP_MAX_LIMIT, Limits.CATCHUP_DEFAULT_LIMIT));
                allowed = CATCHUP_FIELDS;
                break;
            case "sync":
                frame = new Sync(f.id("rid"), f.id("conv"), f.seq("after"),
                        f.optionalInt("limit", 1, Limits.SYNC_MAX_LIMIT, Limits.SYNC_DEFAULT_LIMIT));
                allowed = SYNC_FIELDS;
                break;
            default:
                throw env.unknownType();
        }
        f.rejectUnknown(allowed);
        return frame;
    }

    /** Encodes a client frame (used by the client SDK and tests). */
    public String encode(ClientFrame frame) {
        ObjectNode o;
        if (frame instanceof Auth a) {
            o = start("auth").put("rid", a.rid()).put("token", a.token());
        } else if (frame instanceof Send s) {
            o = start("send").put("rid", s.rid()).put("conv", s.conv()).put("cmid", s.cmid()).put("body", s.body());
        } else if (frame instanceof Edit e) {
            o = start("edit").put("rid", e.rid()).put("conv", e.conv()).put("cmid", e.cmid()).put("seq", e.seq())
                    .put("body", e.body());
        } else if (frame instanceof Recall r) {
            o = start("recall").put("rid", r.rid()).put("conv", r.conv()).put("cmid", r.cmid()).put("seq", r.seq());
        } else if (frame instanceof Ack a) {
            o = start("ack").put("rid", a.rid()).put("conv", a.conv()).put("seq", a.seq());
        } else if (frame instanceof Read r) {
            o = start("read").put("rid", r.rid()).put("conv", r.conv()).put("seq", r.seq());
        } else if (frame instanceof Typing t) {
            o = start("typing").put("rid", t.rid()).put("conv", t.conv());
        } else if (frame instanceof Receipts r) {
            o = start("receipts").put("rid", r.rid()).put("conv", r.conv());
            ArrayNode seqs = o.putArray("seqs");
            r.seqs().forEach(seqs::add);
        } else if (frame instanceof Sub s) {
            o = start("sub").put("rid", s.rid());
            putIfNotNull(o, "after", s.after());
            if (s.limit() != Limits.SUB_DEFAULT_LIMIT) o.put("limit", s.limit());
        } else if (frame instanceof CatchUp c) {
            o = start("catchup").put("rid", c.rid());
            if (c.after() != null) o.put("after", c.after().token());
            if (c.limit() != Limits.CATCHUP_DEFAULT_LIMIT) o.put("limit", c.limit());
        } else if (frame instanceof Sync s) {
            o = start("sync").put("rid", s.rid()).put("conv", s.conv()).put("after", s.after()).put("limit", s.limit());
        } else {
            throw new IllegalArgumentException("not a client frame: " + frame);
        }
        return write(o);
    }

    // ------------------------------------------------------------------ server frames

    /**
     * Decodes a frame received from the server. Unknown fields are ignored; a missing
     * field, a wrong JSON type or an unknown {@code t} throws.
     *
     * @throws ProtocolException for malformed input (never a Jackson exception or NPE)
     */
    public ServerFrame decodeServer(String text) {
        Envelope env = open(serverMapper, text);
        Fields f = env.fields();
        switch (env.type()) {
            case "authed":
                return new Authed(f.string("rid"), f.string("user"), f.string("device"), f.anyInt("epoch"));
            case "sent":
                return new Sent(f.string("rid"), f.string("conv"), f.anyLong("seq"), f.string("mid"),
                        f.bool("dup"), f.anyInt("epoch"));
            case "acked":
                return new Acked(f.string("rid"), f.string("conv"), f.anyLong("delivered"));
            case "readack":
                return new ReadAck(f.string("rid"), f.string("conv"), readState(f));
            case "unread":
                return new Unread(f.string("conv"), readState(f));
            case "typing":
                return new TypingPush(f.string("conv"), f.string("user"));
            case "receipts": {
                List<Receipt> receipts = new ArrayList<>();
                for (Fields r : f.objects("receipts")) {
                    long members = r.count("members");
                    long read = r.count("read");
                    long devices = r.count("devices");
                    long delivered = r.count("delivered");
                    if (read > members || delivered > devices) {
                        throw r.error(ErrorCode.BAD_FIELD, "read", "read must not exceed members, nor delivered devices");
                    }
                    receipts.add(new Receipt(r.count("seq"), members, read, devices, delivered));
                }
                return new ReceiptsReply(f.string("rid"), f.string("conv"), receipts);
            }
            case "subbed": {
                String r = f.string("rid");
                List<ConvState> convs = new ArrayList<>();
                for (Fields c : f.objects("convs")) {
                    convs.add(new ConvState(c.string("conv"), c.anyLong("head"), c.anyLong("delivered"),
                            c.optionalCount("read"), c.optionalCount("unread")));
                }
                return new Subbed(r, convs, f.optionalBool("more"));   // absent from servers that did not page
            }
            case "caughtup": {
                String r = f.string("rid");
                List<Event> events = new ArrayList<>();
                for (Fields e : f.objects("events")) {
                    events.add(event(e));
                }
                List<CaughtUpRange> ranges = new ArrayList<>();
                for (Fields h : f.objects("convs")) {
                    ranges.add(new CaughtUpRange(h.string("conv"), h.anyLong("after"), h.anyLong("upTo")));
                }
                boolean more = f.bool("more");
                CatchUpPosition after = f.optionalPosition("after");
                if (more && after == null) throw new ProtocolException(ErrorCode.MISSING_FIELD, r, "after: required when more is true");
                return new CaughtUp(r, events, ranges, more, after);
            }
            case "synced": {
                String r = f.string("rid");
                String conv = f.string("conv");
                List<Event> events = new ArrayList<>();
                for (Fields e : f.objects("events")) {
                    events.add(event(e));
                }
                return new Synced(r, conv, events, f.bool("more"), f.anyLong("head"));
            }
            case "event":
                return new EventPush(event(f.object("ev")));
            case "hint":
                return new Hint(f.string("conv"), f.anyLong("head"), f.string("why"));
            case "error": {
                String r = f.optionalString("rid");
                String wire = f.string("code");
                ErrorCode code = ErrorCode.fromWire(wire).orElseThrow(() -> new ProtocolException(
                        ErrorCode.BAD_FIELD, env.rid(), "code: unknown error code '" + printable(wire) + "'"));
                String msg = f.optionalString("msg");
                return new ErrorFrame(r, code, msg == null ? "" : msg);
            }
            default:
                throw env.unknownType();
        }
    }

    /** A parsed frame: its fields, its rid when readable (else null) and its type {@code t}. */
    private record Envelope(Fields fields, String rid, String type) {
        ProtocolException unknownType() {
            return new ProtocolException(ErrorCode.UNKNOWN_TYPE, rid, "t: unknown frame type '" + printable(type) + "'");
        }
    }

    /** Parses a frame of either direction as far as its type; a null text is an empty frame. */
    private static Envelope open(ObjectMapper mapper, String text) {
        if (text == null) {
            throw new ProtocolException(ErrorCode.BAD_JSON, null, "frame is empty");
        }
        JsonNode root = parse(mapper, text);
        String rid = readableRid(root);
        JsonNode t = root.get("t");
        if (t == null || !t.isTextual()) {
            throw new ProtocolException(ErrorCode.UNKNOWN_TYPE, rid, "t: required string naming the frame type");
        }
        return new Envelope(new Fields((ObjectNode) root, "", rid), rid, t.textValue());
    }

    private static Event event(Fields e) {
        long seq = e.anyLong("seq");
        String kind = e.string("kind");
        long ref = e.optionalCount("ref");
        if (Event.isChange(kind) != (ref > 0) || ref >= seq && ref > 0) {
            throw e.error(ErrorCode.BAD_FIELD, "ref", Event.isChange(kind)
                    ? "required for " + kind + ": the seq of the message it changes, below the event's seq" : "only for edit and recall");
        }
        return new Event(e.string("conv"), seq, kind, e.string("mid"), e.string("sender"),
                e.optionalString("cmid"), e.optionalString("body"), e.anyLong("at"), e.optionalInt("count", 0, Integer.MAX_VALUE, 0),
                ref, e.optionalBool("recalled"));
    }

    /** Encodes a server frame. */
    public String encode(ServerFrame frame) {
        ObjectNode o;
        if (frame instanceof Authed a) {
            o = start("authed").put("rid", a.rid()).put("user", a.user()).put("device", a.device()).put("epoch", a.epoch());
        } else if (frame instanceof Sent s) {
            o = start("sent").put("rid", s.rid()).put("conv", s.conv()).put("seq", s.seq()).put("mid", s.mid())
                    .put("dup", s.dup()).put("epoch", s.epoch());
        } else if (frame instanceof Acked a) {
            o = start("acked").put("rid", a.rid()).put("conv", a.conv()).put("delivered", a.delivered());
        } else if (frame instanceof ReadAck r) {
            o = putReadState(start("readack").put("rid", r.rid()).put("conv", r.conv()), r.state());
        } else if (frame instanceof Unread u) {
            o = putReadState(start("unread").put("conv", u.conv()), u.state());
        } else if (frame instanceof ReceiptsReply r) {
            o = start("receipts").put("rid", r.rid()).put("conv", r.conv());
            ArrayNode receipts = o.putArray("receipts");
            for (Receipt x : r.receipts()) {
                receipts.addObject().put("seq", x.seq()).put("members", x.members()).put("read", x.read())
                        .put("devices", x.devices()).put("delivered", x.delivered());
            }
        } else if (frame instanceof TypingPush t) {
            o = start("typing").put("conv", t.conv()).put("user", t.user());
        } else if (frame instanceof Subbed s) {
            o = start("subbed").put("rid", s.rid());
            ArrayNode convs = o.putArray("convs");
            for (ConvState c : s.convs()) {
                convs.addObject().put("conv", c.conv()).put("head", c.head()).put("delivered", c.delivered())
                        .put("read", c.read()).put("unread", c.unread());
            }
            o.put("more", s.more());
        } else if (frame instanceof CaughtUp c) {
            o = start("caughtup").put("rid", c.rid());
            ArrayNode events = o.putArray("events");
            for (Event e : c.events()) {
                putEvent(events.addObject(), e);
            }
            ArrayNode ranges = o.putArray("convs");
            for (CaughtUpRange h : c.convs()) {
                ranges.addObject().put("conv", h.conv()).put("after", h.after()).put("upTo", h.upTo());
            }
            o.put("more", c.more());
            if (c.after() != null) o.put("after", c.after().token());
        } else if (frame instanceof Synced s) {
            o = start("synced").put("rid", s.rid()).put("conv", s.conv());
            ArrayNode events = o.putArray("events");
            for (Event e : s.events()) {
                putEvent(events.addObject(), e);
            }
            o.put("more", s.more()).put("head", s.head());
        } else if (frame instanceof EventPush p) {
            o = start("event");
            putEvent(o.putObject("ev"), p.ev());
        } else if (frame instanceof Hint h) {
            o = start("hint").put("conv", h.conv()).put("head", h.head()).put("why", h.why());
        } else if (frame instanceof ErrorFrame e) {
            o = start("error");
            putIfNotNull(o, "rid", e.rid());
            o.put("code", e.code().wire()).put("msg", e.msg());
        } else {
            throw new IllegalArgumentException("not a server frame: " + frame);
        }
        return write(o);
    }

    private static ObjectNode putReadState(ObjectNode o, ReadState r) {
        return o.put("read", r.read()).put("unread", r.unread()).put("head", r.head());
    }

    private static ReadState readState(Fields f) {
        return new ReadState(f.count("read"), f.count("unread"), f.count("head"));
    }

    private static void putEvent(ObjectNode o, Event e) {
        o.put("conv", e.conv()).put("seq", e.seq()).put("kind", e.kind()).put("mid", e.mid()).put("sender", e.sender());
        putIfNotNull(o, "cmid", e.cmid());
        putIfNotNull(o, "body", e.body());
        o.put("at", e.at());
        if (e.count() > 0) o.put("count", e.count());
        if (e.ref() > 0) o.put("ref", e.ref());
        if (e.recalled()) o.put("recalled", true);
    }

    // ------------------------------------------------------------------ helpers

    private ObjectNode start(String type) {
        return clientMapper.createObjectNode().put("t", type);
    }

    private static void putIfNotNull(ObjectNode o, String name, String value) {
        if (value != null) {
            o.put(name, value);
        }
    }

    private String write(ObjectNode o) {
        try {
            return clientMapper.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            // Writing a tree of strings and numbers to a String cannot fail.
            throw new IllegalStateException("cannot encode frame", e);
        }
    }

    private static JsonNode parse(ObjectMapper mapper, String text) {
        JsonNode root;
        try {
            root = mapper.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ProtocolException(ErrorCode.BAD_JSON, null, "not valid JSON: " + printable(e.getOriginalMessage()), e);
        }
        if (root == null || !root.isObject()) {
            throw new ProtocolException(ErrorCode.BAD_JSON, null, "frame must be a JSON object");
        }
        return root;
    }

    private static String readableRid(JsonNode root) {
        JsonNode rid = root.get("rid");
        return rid != null && rid.isTextual() && Limits.isValidId(rid.textValue()) ? rid.textValue() : null;
    }

    /** Echoes client-controlled text in messages only as short printable ASCII. */
    static String printable(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(Math.min(s.length(), 100));
        for (int i = 0; i < s.length() && b.length() < 100; i++) {
            char c = s.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return s.length() > 100 ? b.append("...").toString() : b.toString();
    }

    /** Reads and checks the fields of one JSON object; {@code path} prefixes field names in messages. */
    private record Fields(ObjectNode obj, String path, String rid) {

        private ProtocolException error(ErrorCode code, String name, String problem) {
            return new ProtocolException(code, rid, path + name + ": " + problem);
        }

        private JsonNode required(String name) {
            JsonNode n = obj.get(name);
            if (n == null || n.isNull()) {
                throw error(ErrorCode.MISSING_FIELD, name, "required");
            }
            return n;
        }

        /** The required field {@code name}, which must pass {@code ok}; else BAD_FIELD saying what it {@code must} be. */
        private JsonNode checked(String name, Predicate<JsonNode> ok, String must) {
            JsonNode n = required(name);
            if (!ok.test(n)) {
                throw error(ErrorCode.BAD_FIELD, name, must);
            }
            return n;
        }

        String string(String name) {
            return checked(name, JsonNode::isTextual, "must be a string").textValue();
        }

        String optionalString(String name) {
            JsonNode n = obj.get(name);
            if (n == null || n.isNull()) {
                return null;
            }
            if (!n.isTextual()) {
                throw error(ErrorCode.BAD_FIELD, name, "must be a string");
            }
            return n.textValue();
        }

        String optionalId(String name) {
            return obj.get(name) == null ? null : id(name);
        }

        /** An optional {@link CatchUpPosition} in its wire form. */
        CatchUpPosition optionalPosition(String name) {
            if (obj.get(name) == null) {
                return null;
            }
            String token = checked(name, JsonNode::isTextual, "must be a string from the after of a caughtup frame").textValue();
            return CatchUpPosition.parse(token).orElseThrow(() -> error(ErrorCode.BAD_FIELD, name,
                    "must be the after of a caughtup frame (conv/seq), not '" + printable(token) + "'"));
        }

        boolean optionalBool(String name) {
            return obj.get(name) != null && bool(name);
        }

        String id(String name) {
            return checked(name, n -> n.isTextual() && Limits.isValidId(n.textValue()),
                    "must be a string matching " + Limits.ID_PATTERN).textValue();
        }

        String token(String name) {
            return checked(name, n -> n.isTextual() && Limits.isValidToken(n.textValue()),
                    "must be a string of 1 to " + Limits.MAX_TOKEN_CHARS + " printable ASCII characters").textValue();
        }

        String body(String name) {
            String s = checked(name, n -> n.isTextual() && !n.textValue().isEmpty(), "must be a non-empty string").textValue();
            if (!Limits.isWellFormed(s)) {
                throw error(ErrorCode.BAD_UTF8, name, "contains a lone surrogate (not valid UTF-8)");
            }
            if (!Limits.isStorableText(s)) {
                // Valid JSON and Unicode, but PostgreSQL text cannot hold it: refused here, terminally.
                throw error(ErrorCode.BAD_FIELD, name, "must not contain U+0000 (NUL)");
            }
            if (Limits.utf8Length(s) > Limits.MAX_BODY_BYTES) {
                throw error(ErrorCode.BODY_TOO_LARGE, name, "must be at most " + Limits.MAX_BODY_BYTES + " UTF-8 bytes");
            }
            return s;
        }

        long seq(String name) {
            return integer(required(name), name, 0, Limits.MAX_SEQ);
        }

        /** A non-empty array of at most {@code max} distinct {@link #messageSeq}s. */
        List<Long> messageSeqs(String name, int max) {
            JsonNode n = checked(name, JsonNode::isArray, "must be an array of seqs");
            if (n.isEmpty() || n.size() > max) throw error(ErrorCode.BAD_FIELD, name, "must hold 1 to " + max + " seqs");
            List<Long> out = new ArrayList<>(n.size());
            for (int i = 0; i < n.size(); i++) {
                long seq = integer(n.get(i), name + "[" + i + "]", 1, Limits.MAX_SEQ);
                if (out.contains(seq)) throw error(ErrorCode.BAD_FIELD, name, "lists " + seq + " twice");
                out.add(seq);
            }
            return out;
        }

        /** The seq of an event (at least 1), as the target of an edit or a recall. */
        long messageSeq(String name) {
            return integer(required(name), name, 1, Limits.MAX_SEQ);
        }

        int optionalInt(String name, int min, int max, int dflt) {
            JsonNode n = obj.get(name);
            return n == null ? dflt : (int) integer(n, name, min, max);
        }

        /** A required integer that is never negative (a seq, a cursor, a count). */
        long count(String name) {
            return integer(required(name), name, 0, Long.MAX_VALUE);
        }

        /** {@link #count}, or 0 when absent (a field a server before it did not send). */
        long optionalCount(String name) {
            JsonNode n = obj.get(name);
            return n == null ? 0 : integer(n, name, 0, Long.MAX_VALUE);
        }

        long anyLong(String name) {
            return integer(required(name), name, Long.MIN_VALUE, Long.MAX_VALUE);
        }

        int anyInt(String name) {
            return (int) integer(required(name), name, Integer.MIN_VALUE, Integer.MAX_VALUE);
        }

        private long integer(JsonNode n, String name, long min, long max) {
            if (n.isIntegralNumber() && n.canConvertToLong()) {
                long v = n.longValue();
                if (v >= min && v <= max) {
                    return v;
                }
            }
            String range = min == Long.MIN_VALUE ? "must be a 64-bit integer"
                    : min == Integer.MIN_VALUE ? "must be a 32-bit integer"
                    : "must be an integer between " + min + " and " + max;
            throw error(ErrorCode.BAD_FIELD, name, range);
        }

        boolean bool(String name) {
            return checked(name, JsonNode::isBoolean, "must be a boolean").booleanValue();
        }

        Fields object(String name) {
            return new Fields((ObjectNode) checked(name, JsonNode::isObject, "must be an object"), path + name + ".", rid);
        }

        List<Fields> objects(String name) {
            JsonNode n = checked(name, JsonNode::isArray, "must be an array");
            List<Fields> out = new ArrayList<>(n.size());
            for (int i = 0; i < n.size(); i++) {
                JsonNode e = n.get(i);
                if (!e.isObject()) {
                    throw error(ErrorCode.BAD_FIELD, name + "[" + i + "]", "must be an object");
                }
                out.add(new Fields((ObjectNode) e, path + name + "[" + i + "].", rid));
            }
            return out;
        }

        void rejectUnknown(Set<String> allowed) {
            for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
                String name = it.next();
                if (!allowed.contains(name)) {
                    throw error(ErrorCode.BAD_FIELD, printable(name), "unknown field");
                }
            }
        }
    }
}
