package im.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class FrameCodecTest {
    private static final FrameCodec CODEC = new FrameCodec();

    private static final Event MSG = new Event("c-ab", 7, Event.MSG, "m-1", "u-ana", "7f3c", "héllo 👋", 1_700_000_000_123L);
    private static final Event JOIN = new Event("c-ab", 8, Event.JOIN, "m-2", "u-bo", null, null, 1_700_000_000_456L);
    private static final Event EDIT = new Event("c-ab", 9, Event.EDIT, "m-3", "u-ana", "7f3d", "hello", 1_700_000_000_789L, 0, 7, false);
    private static final Event RECALLED = new Event("c-ab", 7, Event.MSG, "m-1", "u-ana", "7f3c", "", 1_700_000_000_123L, 0, 0, true);

    // ------------------------------------------------------------ round trips

    static Stream<ClientFrame> clientFrames() {
        return Stream.of(
                new Auth("r0", "tok.abc-123_XYZ:1"),
                new Send("r1", "c-ab", "7f3c", "hello \"world\" \n 👋"),
                new Ack("r2", "c-ab", 7),
                new Ack("r2", "c-ab", Limits.MAX_SEQ),
                new Edit("r6", "c-ab", "7f3d", 7, "hello"),
                new Recall("r7", "c-ab", "7f3e", Limits.MAX_SEQ),
                new Typing("r8", "c-ab"),
                new Receipts("r9", "c-ab", List.of(7L, 9L, Limits.MAX_SEQ)),
                new Sub("r3"),
                new Sub("r3", "c-ab", 1),
                new Sub("r3", "c-ab", Limits.SUB_MAX_LIMIT),
                new CatchUp("r5"),
                new CatchUp("r5", new CatchUpPosition("c:a.b_c-d", 0), 1),
                new CatchUp("r5", new CatchUpPosition("c-ab", Limits.MAX_SEQ), Limits.CATCHUP_MAX_LIMIT),
                new Sync("r4", "c-ab", 0, 1),
                new Sync("r4", "c-ab", 12, Limits.SYNC_MAX_LIMIT),
                new Sync("r4", "c-ab", 12));
    }

    @ParameterizedTest
    @MethodSource("clientFrames")
    void everyClientFrameRoundTrips(ClientFrame frame) {
        assertEquals(frame, CODEC.decodeClient(CODEC.encode(frame)));
    }

    static Stream<ServerFrame> serverFrames() {
        return Stream.of(
                new Authed("r0", "u-ana", "d-1", 3),
                new Sent("r1", "c-ab", 7, "m-1", false, 1),
                new Sent("r1", "c-ab", 7, "m-1", true, 1),
                new Acked("r2", "c-ab", 7),
                new Subbed("r3", List.of(new ConvState("c-ab", 8, 7, 6, 2), new ConvState("c-cd", 0, 0, 0, 0))),
                new Subbed("r3", List.of()),
                new Subbed("r3", List.of(new ConvState("c-ab", 8, 7, 8, 0)), true),
                new CaughtUp("r5", List.of(JOIN, MSG), List.of(new CaughtUpRange("c-ab", 0, 9)), false, null),
                new CaughtUp("r5", List.of(MSG), List.of(), true, new CatchUpPosition("c-ab", 9)),
                new CaughtUp("r5", List.of(), List.of(), false, null),
                new Synced("r4", "c-ab", List.of(MSG, JOIN), true, 9),
                new Synced("r4", "c-ab", List.of(RECALLED, JOIN, EDIT), false, 9),
                new EventPush(EDIT),
                new TypingPush("c-ab", "u-ana"),
                new ReceiptsReply("r9", "c-ab", List.of(new Receipt(7, 4, 2, 9, 9), new Receipt(9, 4, 0, 9, 3))),
                new ReceiptsReply("r9", "c-ab", List.of()),
                new Synced("r4", "c-ab", List.of(), false, 0),
                new EventPush(MSG),
                new EventPush(JOIN),
                new Hint("c-ab", 8, "sweep"),
                new ErrorFrame("r5", ErrorCode.NOT_MEMBER, "not a member of c-ab"),
                new ErrorFrame(null, ErrorCode.BAD_JSON, "not valid JSON"));
    }

    @ParameterizedTest
    @MethodSource("serverFrames")
    void everyServerFrameRoundTrips(ServerFrame frame) {
        assertEquals(frame, CODEC.decodeServer(CODEC.encode(frame)));
    }

    // ------------------------------------------------------------ exact wire shapes (brief §3)

    @Test
    void encodesTheBriefsExamplesExactly() {
        assertEquals("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"7f3c\",\"body\":\"hi\"}",
                CODEC.encode(new Send("r1", "c-ab", "7f3c", "hi")));
        assertEquals("{\"t\":\"sent\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":7,\"mid\":\"m-1\",\"dup\":false,\"epoch\":1}",
                CODEC.encode(new Sent("r1", "c-ab", 7, "m-1", false, 1)));
        assertEquals("{\"t\":\"ack\",\"rid\":\"r2\",\"conv\":\"c-ab\",\"seq\":7}",
                CODEC.encode(new Ack("r2", "c-ab", 7)));
        assertEquals("{\"t\":\"acked\",\"rid\":\"r2\",\"conv\":\"c-ab\",\"delivered\":7}",
                CODEC.encode(new Acked("r2", "c-ab", 7)));
        assertEquals("{\"t\":\"event\",\"ev\":{\"conv\":\"c-ab\",\"seq\":7,\"kind\":\"msg\",\"mid\":\"m-1\","
                        + "\"sender\":\"u-ana\",\"cmid\":\"7f3c\",\"body\":\"hi\",\"at\":1700000000123}}",
                CODEC.encode(new EventPush(new Event("c-ab", 7, "msg", "m-1", "u-ana", "7f3c", "hi", 1_700_000_000_123L))));
        assertEquals("{\"t\":\"hint\",\"conv\":\"c-ab\",\"head\":8,\"why\":\"sweep\"}",
                CODEC.encode(new Hint("c-ab", 8, "sweep")));
    }

    @Test
    void omitsNullsOnTheWire() {
        assertEquals("{\"t\":\"event\",\"ev\":{\"conv\":\"c-ab\",\"seq\":8,\"kind\":\"join\",\"mid\":\"m-2\","
                + "\"sender\":\"u-bo\",\"at\":1700000000456}}", CODEC.encode(new EventPush(JOIN)));
        assertEquals("{\"t\":\"error\",\"code\":\"BAD_JSON\",\"msg\":\"x\"}",
                CODEC.encode(new ErrorFrame(null, ErrorCode.BAD_JSON, "x")));
        assertEquals("{\"t\":\"error\",\"rid\":\"r1\",\"code\":\"NOT_MEMBER\",\"msg\":\"x\"}",
                CODEC.encode(new ErrorFrame("r1", ErrorCode.NOT_MEMBER, "x")));
    }

    @Test
    void syncWithoutLimitGetsTheDefault() {
        assertEquals(new Sync("r1", "c-ab", 5, Limits.SYNC_DEFAULT_LIMIT),
                CODEC.decodeClient("{\"t\":\"sync\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"after\":5}"));
    }

    @Test
    void aSubWithoutAfterOrLimitIsTheFirstPageOfTheDefaultSize() {
        assertEquals(new Sub("r3", null, Limits.SUB_DEFAULT_LIMIT), CODEC.decodeClient("{\"t\":\"sub\",\"rid\":\"r3\"}"));
        assertEquals("{\"t\":\"sub\",\"rid\":\"r3\"}", CODEC.encode(new Sub("r3")));
        assertEquals(new Subbed("r3", List.of(), false), CODEC.decodeServer("{\"t\":\"subbed\",\"rid\":\"r3\",\"convs\":[]}"));
        assertEquals("{\"t\":\"catchup\",\"rid\":\"r5\",\"after\":\"c-ab/7\"}",
                CODEC.encode(new CatchUp("r5", new CatchUpPosition("c-ab", 7), Limits.CATCHUP_DEFAULT_LIMIT)));
    }

    @Test
    void acceptsFieldsInAnyOrderAndWhitespace() {
        assertEquals(new Ack("r2", "c-ab", 0),
                CODEC.decodeClient(" {\n \"seq\" : 0, \"conv\":\"c-ab\", \"rid\":\"r2\", \"t\":\"ack\" } "));
    }

    // ------------------------------------------------------------ hostile client input

    private static final String SEND = "{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":%s}";
    private static final String ACK = "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":%s}";
    private static final String SUB = "{\"t\":\"sub\",\"rid\":\"r1\",%s}";
    private static final String CATCHUP = "{\"t\":\"catchup\",\"rid\":\"r1\",%s}";
    private static final String SYNC = "{\"t\":\"sync\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"after\":0,\"limit\":%s}";

    private static String quoted(String s) {
        return "\"" + s + "\"";
    }

    static Stream<Arguments> badClientFrames() {
        String nested = "[".repeat(100) + "]".repeat(100);
        return Stream.of(
                bad("not json", "hello", ErrorCode.BAD_JSON, null),
                bad("empty", "", ErrorCode.BAD_JSON, null),
                bad("truncated", "{\"t\":\"sub\",\"rid\":\"r1\"", ErrorCode.BAD_JSON, null),
                bad("trailing garbage", "{\"t\":\"sub\",\"rid\":\"r1\"} x", ErrorCode.BAD_JSON, null),
                bad("array instead of object", "[{\"t\":\"sub\",\"rid\":\"r1\"}]", ErrorCode.BAD_JSON, null),
                bad("string instead of object", "\"sub\"", ErrorCode.BAD_JSON, null),
                bad("null", "null", ErrorCode.BAD_JSON, null),
                bad("single quotes", "{'t':'sub','rid':'r1'}", ErrorCode.BAD_JSON, null),
                bad("duplicate key", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":1,\"seq\":2}", ErrorCode.BAD_JSON, null),
                bad("nesting depth 100", "{\"t\":\"sub\",\"rid\":\"r1\",\"x\":" + nested + "}", ErrorCode.BAD_JSON, null),
                bad("unknown t", "{\"t\":\"boom\",\"rid\":\"r1\"}", ErrorCode.UNKNOWN_TYPE, "r1"),
                bad("t missing", "{\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":1}", ErrorCode.UNKNOWN_TYPE, "r1"),
                bad("t a number", "{\"t\":1,\"rid\":\"r1\"}", ErrorCode.UNKNOWN_TYPE, "r1"),
                bad("t wrong case", "{\"t\":\"ACK\",\"rid\":\"r1\"}", ErrorCode.UNKNOWN_TYPE, "r1"),
                bad("rid missing", "{\"t\":\"sub\"}", ErrorCode.MISSING_FIELD, null),
                bad("rid invalid", "{\"t\":\"sub\",\"rid\":\"r 1\"}", ErrorCode.BAD_FIELD, null),
                bad("rid a number", "{\"t\":\"sub\",\"rid\":1}", ErrorCode.BAD_FIELD, null),
                bad("missing conv", "{\"t\":\"ack\",\"rid\":\"r1\",\"seq\":1}", ErrorCode.MISSING_FIELD, "r1"),
                bad("null conv", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":null,\"seq\":1}", ErrorCode.MISSING_FIELD, "r1"),
                bad("missing seq", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\"}", ErrorCode.MISSING_FIELD, "r1"),
                bad("seq as string", ACK.formatted("\"7\""), ErrorCode.BAD_FIELD, "r1"),
                bad("seq float", ACK.formatted("7.5"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq 7.0", ACK.formatted("7.0"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq boolean", ACK.formatted("true"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq object", ACK.formatted("{\"v\":7}"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq negative", ACK.formatted("-1"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq above 2^53-1", ACK.formatted("9007199254740992"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq 1e400", ACK.formatted("1e400"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq overflows long", ACK.formatted("99999999999999999999"), ErrorCode.BAD_FIELD, "r1"),
                bad("seq NaN", ACK.formatted("NaN"), ErrorCode.BAD_JSON, null),
                bad("seq 1000 digits", ACK.formatted("9".repeat(1000)), ErrorCode.BAD_JSON, null),
                bad("empty body", SEND.formatted("\"\""), ErrorCode.BAD_FIELD, "r1"),
                bad("null body", SEND.formatted("null"), ErrorCode.MISSING_FIELD, "r1"),
                bad("body a number", SEND.formatted("5"), ErrorCode.BAD_FIELD, "r1"),
                bad("body 16385 bytes of multibyte chars", SEND.formatted(quoted("é".repeat(8192) + "x")),
                        ErrorCode.BODY_TOO_LARGE, "r1"),
                bad("body 4097 four-byte chars", SEND.formatted(quoted("👋".repeat(4097))), ErrorCode.BODY_TOO_LARGE, "r1"),
                bad("frame over 64 KiB", SEND.formatted(quoted("a".repeat(Limits.MAX_FRAME_BYTES))),
                        ErrorCode.FRAME_TOO_LARGE, null),
                bad("frame over 64 KiB in bytes not chars", SEND.formatted(quoted("é".repeat(33000))),
                        ErrorCode.FRAME_TOO_LARGE, null),
                bad("lone surrogate escape", SEND.formatted("\"a\\ud800b\""), ErrorCode.BAD_UTF8, "r1"),
                bad("lone low surrogate raw", SEND.formatted(quoted("a\udc00")), ErrorCode.BAD_UTF8, "r1"),
                bad("NUL escape in body", SEND.formatted("\"a\\u0000b\""), ErrorCode.BAD_FIELD, "r1"),
                bad("body only NUL", SEND.formatted("\"\\u0000\""), ErrorCode.BAD_FIELD, "r1"),
                bad("bad id chars", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c/ab\",\"seq\":1}", ErrorCode.BAD_FIELD, "r1"),
                bad("id with unicode", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"cé\",\"seq\":1}", ErrorCode.BAD_FIELD, "r1"),
                bad("id 65 chars", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"" + "c".repeat(65) + "\",\"seq\":1}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("empty id", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"\",\"seq\":1}", ErrorCode.BAD_FIELD, "r1"),
                bad("unknown field", "{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":1,\"x\":1}", ErrorCode.BAD_FIELD, "r1"),
                bad("empty token", "{\"t\":\"auth\",\"rid\":\"r1\",\"token\":\"\"}", ErrorCode.BAD_FIELD, "r1"),
                bad("token too long", "{\"t\":\"auth\",\"rid\":\"r1\",\"token\":\"" + "a".repeat(513) + "\"}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("sync limit 0", SYNC.formatted("0"), ErrorCode.BAD_FIELD, "r1"),
                bad("sync limit 501", SYNC.formatted("501"), ErrorCode.BAD_FIELD, "r1"),
                bad("sync limit null", SYNC.formatted("null"), ErrorCode.BAD_FIELD, "r1"),
                bad("sub limit 0", SUB.formatted("\"limit\":0"), ErrorCode.BAD_FIELD, "r1"),
                bad("sub limit 1001", SUB.formatted("\"limit\":1001"), ErrorCode.BAD_FIELD, "r1"),
                bad("sub after not an id", SUB.formatted("\"after\":\"c/ab\""), ErrorCode.BAD_FIELD, "r1"),
                bad("sub after a number", SUB.formatted("\"after\":5"), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup limit 0", CATCHUP.formatted("\"limit\":0"), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup limit 1001", CATCHUP.formatted("\"limit\":1001"), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after without seq", CATCHUP.formatted("\"after\":\"c-ab\""), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after seq not decimal", CATCHUP.formatted("\"after\":\"c-ab/+7\""), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after seq with a leading zero", CATCHUP.formatted("\"after\":\"c-ab/07\""), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after seq above 2^53-1", CATCHUP.formatted("\"after\":\"c-ab/9007199254740992\""), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after bad conv", CATCHUP.formatted("\"after\":\"c ab/7\""), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup after a number", CATCHUP.formatted("\"after\":7"), ErrorCode.BAD_FIELD, "r1"),
                bad("catchup unknown field", CATCHUP.formatted("\"conv\":\"c-ab\""), ErrorCode.BAD_FIELD, "r1"),
                bad("edit of seq 0", "{\"t\":\"edit\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"seq\":0,\"body\":\"x\"}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("edit with an empty body", "{\"t\":\"edit\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"seq\":3,\"body\":\"\"}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("edit without cmid", "{\"t\":\"edit\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":3,\"body\":\"x\"}",
                        ErrorCode.MISSING_FIELD, "r1"),
                bad("recall with a body", "{\"t\":\"recall\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"seq\":3,\"body\":\"x\"}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("recall without seq", "{\"t\":\"recall\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\"}",
                        ErrorCode.MISSING_FIELD, "r1"),
                bad("typing without conv", "{\"t\":\"typing\",\"rid\":\"r1\"}", ErrorCode.MISSING_FIELD, "r1"),
                bad("typing with a body", "{\"t\":\"typing\",\"rid\":\"r1\",\"conv\":\"c\",\"body\":\"x\"}", ErrorCode.BAD_FIELD, "r1"),
                bad("receipts of no seq", "{\"t\":\"receipts\",\"rid\":\"r1\",\"conv\":\"c\",\"seqs\":[]}", ErrorCode.BAD_FIELD, "r1"),
                bad("receipts of seq 0", "{\"t\":\"receipts\",\"rid\":\"r1\",\"conv\":\"c\",\"seqs\":[0]}", ErrorCode.BAD_FIELD, "r1"),
                bad("receipts of a seq twice", "{\"t\":\"receipts\",\"rid\":\"r1\",\"conv\":\"c\",\"seqs\":[3,3]}", ErrorCode.BAD_FIELD, "r1"),
                bad("receipts of 101 seqs", "{\"t\":\"receipts\",\"rid\":\"r1\",\"conv\":\"c\",\"seqs\":["
                        + java.util.stream.LongStream.rangeClosed(1, 101).mapToObj(Long::toString).collect(Collectors.joining(",")) + "]}",
                        ErrorCode.BAD_FIELD, "r1"),
                bad("receipts seqs not an array", "{\"t\":\"receipts\",\"rid\":\"r1\",\"conv\":\"c\",\"seqs\":3}", ErrorCode.BAD_FIELD, "r1"),
                bad("sync after missing", "{\"t\":\"sync\",\"rid\":\"r1\",\"conv\":\"c-ab\"}", ErrorCode.MISSING_FIELD, "r1"));
    }

    private static Arguments bad(String name, String json, ErrorCode code, String rid) {
        return Arguments.of(name, json, code, rid);
    }

    @ParameterizedTest(name = "{0} -> {2}")
    @MethodSource("badClientFrames")
    void rejectsBadClientFrameWithItsCodeAndRid(String name, String json, ErrorCode code, String rid) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient(json));
        assertEquals(code, e.code(), () -> name + ": " + e.getMessage());
        assertEquals(rid, e.rid(), name);
        assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), name);
    }

    @Test
    void errorMessageNamesTheField() {
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient(ACK.formatted("-1")));
        assertEquals("seq: must be an integer between 0 and 9007199254740991", e.getMessage());
        e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient("{\"t\":\"sub\",\"rid\":\"r1\",\"zz\":1}"));
        assertEquals("zz: unknown field", e.getMessage());
        e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient("{\"t\":\"ack\",\"rid\":\"r1\",\"seq\":1}"));
        assertEquals("conv: required", e.getMessage());
    }

    @Test
    void nulInABodyIsRefusedNamingTheCharacter() {
        // PostgreSQL text cannot hold U+0000: refused here, terminally, instead of failing the INSERT (INTERNAL).
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient(SEND.formatted("\"x\\u0000\"")));
        assertEquals("body: must not contain U+0000 (NUL)", e.getMessage());
        assertFalse(e.code().retriable());
        assertTrue(Limits.isStorableText("ok \u0001 \ud83d\udc4b"));
        assertFalse(Limits.isStorableText("a\u0000"));
        assertFalse(Limits.isStorableText("a\ud800"));
    }

    @Test
    void bodyAtExactlyTheLimitIsAccepted() {
        String body = "é".repeat(Limits.MAX_BODY_BYTES / 2);
        assertEquals(new Send("r1", "c-ab", "m1", body), CODEC.decodeClient(SEND.formatted(quoted(body))));
        String pair = "a\ud83d\udc4b"; // a valid surrogate pair is fine
        assertEquals(pair, ((Send) CODEC.decodeClient(SEND.formatted(quoted(pair)))).body());
    }

    @Test
    void frameAtExactlyTheLimitIsAcceptedAndOneByteMoreIsNot() {
        String base = "{\"t\":\"sub\",\"rid\":\"r1\"}";
        String padded = base + " ".repeat(Limits.MAX_FRAME_BYTES - base.length());
        assertEquals(new Sub("r1"), CODEC.decodeClient(padded));
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient(padded + " "));
        assertEquals(ErrorCode.FRAME_TOO_LARGE, e.code());
    }

    @Test
    void nestingUpToTheDepthLimitIsParsedAndThenRejectedAsAField() {
        // root object is depth 1, so 7 arrays reach MAX_JSON_DEPTH = 8
        String ok = "{\"t\":\"sub\",\"rid\":\"r1\",\"x\":" + "[".repeat(7) + "]".repeat(7) + "}";
        assertEquals(ErrorCode.BAD_FIELD, assertThrows(ProtocolException.class, () -> CODEC.decodeClient(ok)).code());
        String deep = "{\"t\":\"sub\",\"rid\":\"r1\",\"x\":" + "[".repeat(8) + "]".repeat(8) + "}";
        assertEquals(ErrorCode.BAD_JSON, assertThrows(ProtocolException.class, () -> CODEC.decodeClient(deep)).code());
    }

    @Test
    void idPatternAndUtf8LengthHelpers() {
        assertTrue(Limits.isValidId("A-z_0.9:x"));
        assertTrue(Limits.isValidId("c".repeat(64)));
        assertFalse(Limits.isValidId("c".repeat(65)));
        assertFalse(Limits.isValidId(""));
        assertFalse(Limits.isValidId(null));
        assertFalse(Limits.isValidId("a b"));
        assertEquals(1 + 2 + 3 + 4, Limits.utf8Length("aé€👋"));
        assertEquals("aé€👋".getBytes(java.nio.charset.StandardCharsets.UTF_8).length, Limits.utf8Length("aé€👋"));
    }

    // ------------------------------------------------------------ server frames on the client side

    @Test
    void serverDecodeIgnoresUnknownFields() {
        assertEquals(new Acked("r2", "c-ab", 7),
                CODEC.decodeServer("{\"t\":\"acked\",\"rid\":\"r2\",\"conv\":\"c-ab\",\"delivered\":7,\"new\":{\"x\":[1]}}"));
        assertEquals(new EventPush(JOIN), CODEC.decodeServer(
                "{\"t\":\"event\",\"ev\":{\"conv\":\"c-ab\",\"seq\":8,\"kind\":\"join\",\"mid\":\"m-2\","
                        + "\"sender\":\"u-bo\",\"at\":1700000000456,\"future\":true},\"x\":1}"));
    }

    @Test
    void serverDecodeRejectsTypeErrorsWithProtocolException() {
        assertServerBad("{\"t\":\"acked\",\"rid\":\"r2\",\"conv\":\"c-ab\",\"delivered\":\"7\"}", ErrorCode.BAD_FIELD);
        assertServerBad("{\"t\":\"acked\",\"rid\":\"r2\",\"conv\":\"c-ab\"}", ErrorCode.MISSING_FIELD);
        assertServerBad("{\"t\":\"sent\",\"rid\":\"r1\",\"conv\":\"c\",\"seq\":7,\"mid\":\"m\",\"dup\":\"no\",\"epoch\":1}",
                ErrorCode.BAD_FIELD);
        assertServerBad("{\"t\":\"synced\",\"rid\":\"r\",\"conv\":\"c\",\"events\":[1],\"more\":false,\"head\":1}",
                ErrorCode.BAD_FIELD);
        assertServerBad("{\"t\":\"subbed\",\"rid\":\"r\",\"convs\":{}}", ErrorCode.BAD_FIELD);
        assertServerBad("{\"t\":\"error\",\"code\":\"NO_SUCH_CODE\",\"msg\":\"x\"}", ErrorCode.BAD_FIELD);
        assertServerBad("{\"t\":\"event\"}", ErrorCode.MISSING_FIELD);
        String edit = "{\"t\":\"event\",\"ev\":{\"conv\":\"c\",\"seq\":8,\"kind\":\"edit\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"x\",\"at\":1%s}}";
        assertServerBad(edit.formatted(""), ErrorCode.BAD_FIELD);   // an edit without ref
        assertServerBad(edit.formatted(",\"ref\":8"), ErrorCode.BAD_FIELD);   // not below its own seq
        assertServerBad(edit.replace("edit", "msg").formatted(",\"ref\":2"), ErrorCode.BAD_FIELD);   // a message with a ref
        assertServerBad("{\"t\":\"wat\"}", ErrorCode.UNKNOWN_TYPE);
        assertServerBad("[]", ErrorCode.BAD_JSON);
        assertServerBad("{", ErrorCode.BAD_JSON);
    }

    private static void assertServerBad(String json, ErrorCode code) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeServer(json));
        assertEquals(code, e.code(), json);
    }

    @Test
    void mangledFramesOnlyEverThrowProtocolException() {
        Random random = new Random(42);
        List<String> seeds = Stream.concat(clientFrames().map(CODEC::encode), serverFrames().map(CODEC::encode))
                .collect(Collectors.toList());
        String alphabet = "{}[]\":,0123456789-.eE tnufalsr\\\ud800é";
        for (int i = 0; i < 20_000; i++) {
            StringBuilder s = new StringBuilder(seeds.get(random.nextInt(seeds.size())));
            for (int k = random.nextInt(4); k >= 0; k--) {
                int at = random.nextInt(s.length());
                switch (random.nextInt(3)) {
                    case 0 -> s.deleteCharAt(at);
                    case 1 -> s.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                    default -> s.setCharAt(at, alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            String text = s.toString();
            for (int side = 0; side < 2; side++) {
                try {
                    if (side == 0) {
                        CODEC.decodeClient(text);
                    } else {
                        CODEC.decodeServer(text);
                    }
                } catch (ProtocolException expected) {
                    // fine: every failure must be this type
                } catch (RuntimeException e) {
                    fail("side " + side + " threw " + e + " for " + text);
                }
            }
        }
    }

    // ------------------------------------------------------------ error codes

    @Test
    void errorCodeWireNamesAreStable() {
        // Renaming, removing or reordering a code is a protocol change: update docs/protocol.md and clients first.
        assertEquals(List.of("BAD_JSON", "UNKNOWN_TYPE", "MISSING_FIELD", "BAD_FIELD", "BODY_TOO_LARGE",
                        "FRAME_TOO_LARGE", "BAD_UTF8", "BINARY_UNSUPPORTED", "NOT_AUTHENTICATED",
                        "ALREADY_AUTHENTICATED", "BAD_TOKEN", "STALE_INSTALL", "UNKNOWN_CONV", "NOT_MEMBER",
                        "CMID_CONFLICT", "CURSOR_AHEAD", "RATE_LIMITED", "UNAVAILABLE", "INTERNAL",
                        "NOT_A_MESSAGE", "NOT_SENDER", "TOO_LATE", "RECALLED"),
                Arrays.stream(ErrorCode.values()).map(ErrorCode::wire).collect(Collectors.toList()));
        for (ErrorCode c : ErrorCode.values()) {
            assertEquals(c, ErrorCode.fromWire(c.wire()).orElseThrow());
            assertFalse(c.description().isBlank());
        }
        assertTrue(ErrorCode.fromWire("nope").isEmpty());
    }

    @Test
    void onlyTokenErrorsCloseAndOnlyTransientErrorsAreRetriable() {
        for (ErrorCode c : ErrorCode.values()) {
            assertEquals(c == ErrorCode.BAD_TOKEN || c == ErrorCode.STALE_INSTALL, c.closesConnection(), c.name());
            assertEquals(c == ErrorCode.UNAVAILABLE || c == ErrorCode.RATE_LIMITED || c == ErrorCode.INTERNAL,
                    c.retriable(), c.name());
        }
        assertEquals(4001, ErrorCode.BAD_TOKEN.closeStatus());
        assertEquals(4003, ErrorCode.STALE_INSTALL.closeStatus());
        assertEquals(0, ErrorCode.NOT_MEMBER.closeStatus());
    }

    @Test
    void errorFrameFromExceptionKeepsCodeRidAndMessage() {
        ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.decodeClient(ACK.formatted("-1")));
        ErrorFrame f = ErrorFrame.of(e);
        assertEquals(new ErrorFrame("r1", ErrorCode.BAD_FIELD, "seq: must be an integer between 0 and 9007199254740991"), f);
        assertNull(ErrorFrame.of(new ProtocolException(ErrorCode.BAD_JSON, null, "x")).rid());
    }

    @Test
    void authToStringDoesNotLeakTheToken() {
        assertFalse(new Auth("r1", "secret-token").toString().contains("secret"));
    }
}
