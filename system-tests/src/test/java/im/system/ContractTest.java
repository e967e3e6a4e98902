package im.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.CatchUp;
import im.protocol.CatchUpPosition;
import im.protocol.CaughtUp;
import im.protocol.ClientFrame;
import im.protocol.CaughtUpRange;
import im.protocol.ConvState;
import im.protocol.Edit;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.FrameCodec;
import im.protocol.Hint;
import im.protocol.Send;
import im.protocol.Read;
import im.protocol.Recall;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import im.protocol.Sent;
import im.protocol.Unread;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import im.topics.CursorRecord;
import im.topics.EventRecord;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/asyncapi.yaml covers every frame type of {@code protocol} and every record type of the public
 * topics, its error codes are {@link ErrorCode}'s, what the codecs write conforms, and the schemas
 * reject what the server rejects (so the checks of ContractIT can fail). ContractIT checks real output.
 */
class ContractTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Contract CONTRACT = Contract.load();
    private static final FrameCodec CODEC = new FrameCodec();
    private static final Event MSG = new Event("c-ab", 3, "msg", "m-1", "u-ana", "k1", "hi", 1_700_000_000_123L);
    private static final Event JOIN = new Event("c-ab", 1, "join", "m-0", "u-ana", null, "", 1_700_000_000_000L);
    private static final Event BULK_JOIN = new Event("c-ab", 2, "join", "m-2", "u-bo", null, "", 1_700_000_000_050L, 3);
    private static final Event EDIT = new Event("c-ab", 4, "edit", "m-4", "u-ana", "k2", "hi, edited", 1_700_000_000_200L, 0, 3, false);
    private static final Event RECALL = new Event("c-ab", 5, "recall", "m-5", "u-ana", "k3", "", 1_700_000_000_300L, 0, 3, false);
    /** MSG and EDIT as every read returns them after RECALL. */
    private static final Event TOMBSTONE = new Event("c-ab", 3, "msg", "m-1", "u-ana", "k1", "", 1_700_000_000_123L, 0, 0, true);
    private static final Event EDIT_TOMBSTONE = new Event("c-ab", 4, "edit", "m-4", "u-ana", "k2", "", 1_700_000_000_200L, 0, 3, true);

    /** One sample of every frame record, keyed by its class; the sealed interfaces say which must be here. */
    private static final Map<Class<?>, Object> SAMPLES = Map.ofEntries(
            Map.entry(Auth.class, new Auth("r0", "imt_abc")),
            Map.entry(Send.class, new Send("r1", "c-ab", "k1", "hi")),
            Map.entry(Edit.class, new Edit("r7", "c-ab", "k2", 3, "hi, edited")),
            Map.entry(Recall.class, new Recall("r8", "c-ab", "k3", 3)),
            Map.entry(Ack.class, new Ack("r2", "c-ab", 3)),
            Map.entry(Read.class, new Read("r6", "c-ab", 3)),
            Map.entry(im.protocol.Typing.class, new im.protocol.Typing("r8", "c-ab")),
            Map.entry(im.protocol.TypingPush.class, new im.protocol.TypingPush("c-ab", "u-ana")),
            Map.entry(im.protocol.Receipts.class, new im.protocol.Receipts("r9", "c-ab", List.of(3L, 5L))),
            Map.entry(im.protocol.ReceiptsReply.class, new im.protocol.ReceiptsReply("r9", "c-ab",
                    List.of(new im.protocol.Receipt(3, 2, 1, 3, 2), new im.protocol.Receipt(5, 2, 0, 3, 0)))),
            Map.entry(Sub.class, new Sub("r3", "c-aa", 2)),
            Map.entry(CatchUp.class, new CatchUp("r5", new CatchUpPosition("c-aa", 4), 10)),
            Map.entry(Sync.class, new Sync("r4", "c-ab", 0, 100)),
            Map.entry(Authed.class, new Authed("r0", "u-ana", "d-ana", 1)),
            Map.entry(Sent.class, new Sent("r1", "c-ab", 3, "m-1", false, 1)),
            Map.entry(Acked.class, new Acked("r2", "c-ab", 3)),
            Map.entry(ReadAck.class, new ReadAck("r6", "c-ab", new ReadState(3, 0, 3))),
            Map.entry(Unread.class, new Unread("c-ab", new ReadState(2, 1, 3))),
            Map.entry(Subbed.class, new Subbed("r3", List.of(new ConvState("c-ab", 3, 2, 1, 1)), true)),
            Map.entry(CaughtUp.class, new CaughtUp("r5", List.of(JOIN, MSG), List.of(new CaughtUpRange("c-ab", 0, 3)), true,
                    new CatchUpPosition("c-ab", 3))),
            Map.entry(Synced.class, new Synced("r4", "c-ab", List.of(JOIN, MSG), false, 3)),
            Map.entry(EventPush.class, new EventPush(MSG)),
            Map.entry(Hint.class, new Hint("c-ab", 3, "sweep")),
            Map.entry(ErrorFrame.class, new ErrorFrame("r1", ErrorCode.NOT_MEMBER, "not a member")));

    private static String encode(Object frame) {
        return frame instanceof ClientFrame c ? CODEC.encode(c) : CODEC.encode((ServerFrame) frame);
    }

    @Test
    void everyFrameTypeOfTheProtocolHasAMessageAndItsEncodingConforms() {
        Set<Class<?>> types = new java.util.HashSet<>(Arrays.asList(ClientFrame.class.getPermittedSubclasses()));
        types.addAll(Arrays.asList(ServerFrame.class.getPermittedSubclasses()));
        assertEquals(types, SAMPLES.keySet(), "a sample (and a message in asyncapi.yaml) for every frame type");
        for (Object frame : SAMPLES.values()) {
            String json = encode(frame);
            String t = readT(json);
            assertTrue(CONTRACT.messages().contains(t), "asyncapi.yaml has a message for frame type " + t);
            assertEquals(List.of(), CONTRACT.violations(t, json), json);
        }
    }

    @Test
    void everyWebSocketMessageIsInTheWsChannelAndEveryTopicMessageInItsChannel() {
        Set<String> ws = names(CONTRACT.doc.path("channels").path("ws").path("messages"));
        Set<String> frames = SAMPLES.values().stream().map(f -> readT(encode(f))).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(frames, ws);
        assertEquals(Set.of("eventRecord"), names(CONTRACT.doc.path("channels").path("events").path("messages")));
        assertEquals(Set.of("cursorUpdate", "cursorDeleted", "readCursor"), names(CONTRACT.doc.path("channels").path("cursors").path("messages")));
    }

    @Test
    void theErrorCodesAreExactlyThoseOfTheProtocol() {
        Set<String> inYaml = new TreeSet<>();
        CONTRACT.doc.path("components").path("schemas").path("ErrorCode").path("enum").forEach(n -> inYaml.add(n.asText()));
        assertEquals(Arrays.stream(ErrorCode.values()).map(ErrorCode::wire).collect(Collectors.toCollection(TreeSet::new)), inYaml);
        Set<String> retriable = new TreeSet<>();
        CONTRACT.doc.path("components").path("schemas").path("ErrorCode").path("x-retriable").forEach(n -> retriable.add(n.asText()));
        assertEquals(Arrays.stream(ErrorCode.values()).filter(ErrorCode::retriable).map(ErrorCode::wire)
                .collect(Collectors.toCollection(TreeSet::new)), retriable);
    }

    @Test
    void aBulkJoinAnEditARecallAndTombstonesConformAsTheCodecWritesThem() {
        for (Event e : List.of(BULK_JOIN, EDIT, RECALL)) {
            String json = CODEC.encode(new EventPush(e));
            assertEquals(List.of(), CONTRACT.violations("event", json), json);
        }
        String synced = CODEC.encode(new Synced("r4", "c-ab", List.of(JOIN, BULK_JOIN, TOMBSTONE, EDIT_TOMBSTONE, RECALL), false, 5));
        assertEquals(List.of(), CONTRACT.violations("synced", synced), synced);
    }

    @Test
    void bulkJoinEditAndRecallRecordsOfTheEventTopicConform() {
        EventRecord bulk = new EventRecord("c-ab", 2, "join", "m-2", "u-bo", null, null, "", 1L, 3, List.of("u-bo", "u-cy", "u-di"));
        EventRecord edit = new EventRecord("c-ab", 4, "edit", "m-4", "u-ana", "d-ana", "k2", "hi, edited", 1L, 0, null, 3);
        EventRecord recall = new EventRecord("c-ab", 5, "recall", "m-5", "u-ana", "d-ana", "k3", "", 1L, 0, null, 3);
        // A re-snapshot or a backfill publishes the row as the recall left it.
        EventRecord emptied = new EventRecord("c-ab", 3, "msg", "m-1", "u-ana", "d-ana", "k1", "", 1L);
        for (EventRecord r : List.of(bulk, edit, recall, emptied)) {
            assertEquals(List.of(), CONTRACT.violations("eventRecord", r.toJson()), r.toJson());
        }
    }

    @Test
    void everyPublicTopicRecordTypeConforms() {
        EventRecord msg = new EventRecord("c-ab", 3, "msg", "m-1", "u-ana", "d-ana", "k1", "hi", 1L);
        EventRecord join = new EventRecord("c-ab", 1, "join", "m-0", "u-ana", null, null, "", 1L);
        assertEquals(List.of(), CONTRACT.violations("eventRecord", msg.toJson()));
        assertEquals(List.of(), CONTRACT.violations("eventRecord", join.toJson()));
        for (Class<?> c : CursorRecord.class.getPermittedSubclasses()) {
            List<CursorRecord> rs = c == CursorRecord.Deleted.class
                    ? List.of(new CursorRecord.Deleted("c-ab", "d-bo", 2), new CursorRecord.Deleted("c-ab", "d-bo", CursorRecord.Deleted.ANY_EPOCH))
                    : c == CursorRecord.Read.class ? List.of(new CursorRecord.Read("c-ab", "u-bo", 4, 1L))
                    : List.of(new CursorRecord.Update("c-ab", "d-bo", 1, 4, 1L));
            for (CursorRecord r : rs) {
                JsonNode v = read(r.toJson());
                assertEquals(List.of(), CONTRACT.violations(Contract.cursorMessage(v), v), r.toJson());
            }
        }
    }

    @Test
    void theSchemasRejectWhatTheServerRejectsAndFieldsTheyDoNotDescribe() {
        // Each of these is refused by the codec (BAD_FIELD, MISSING_FIELD, ...): the schema must refuse it too.
        for (String bad : List.of(
                "{\"t\":\"ack\",\"rid\":\"r\",\"conv\":\"c\",\"seq\":\"7\"}",
                "{\"t\":\"ack\",\"rid\":\"r\",\"conv\":\"c\",\"seq\":-1}",
                "{\"t\":\"ack\",\"rid\":\"r\",\"conv\":\"c\"}",
                "{\"t\":\"sub\",\"rid\":\"r\",\"extra\":1}",
                "{\"t\":\"send\",\"rid\":\"r\",\"conv\":\"c d\",\"cmid\":\"k\",\"body\":\"x\"}",
                "{\"t\":\"send\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"body\":\"\"}",
                "{\"t\":\"send\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"body\":\"a\\u0000b\"}",
                "{\"t\":\"sync\",\"rid\":\"r\",\"conv\":\"c\",\"after\":0,\"limit\":501}",
                "{\"t\":\"sub\",\"rid\":\"r\",\"limit\":1001}",
                "{\"t\":\"sub\",\"rid\":\"r\",\"after\":\"c/d\"}",
                "{\"t\":\"catchup\",\"rid\":\"r\",\"limit\":0}",
                "{\"t\":\"catchup\",\"rid\":\"r\",\"after\":\"c-ab/07\"}",
                "{\"t\":\"catchup\",\"rid\":\"r\",\"after\":\"c-ab\"}")) {
            assertFalse(CONTRACT.violations(readT(bad), bad).isEmpty(), "the schema accepts " + bad);
        }
        assertFalse(CONTRACT.violations("sent", "{\"t\":\"sent\",\"rid\":\"r\",\"conv\":\"c\",\"seq\":1,\"mid\":\"m\",\"dup\":false,\"epoch\":1,\"new\":1}").isEmpty(),
                "a server field the contract does not describe fails");
        assertFalse(CONTRACT.violations("error", "{\"t\":\"error\",\"code\":\"NOPE\",\"msg\":\"\"}").isEmpty());
        assertFalse(CONTRACT.violations("event", "{\"t\":\"event\",\"ev\":{\"conv\":\"c\",\"seq\":1,\"kind\":\"join\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"\",\"at\":1}}").isEmpty(),
                "a join with a cmid");
        assertFalse(CONTRACT.violations("eventRecord", "{\"v\":1,\"conv\":\"c\",\"seq\":1,\"kind\":\"msg\",\"mid\":\"m\",\"sender\":\"u\",\"device\":\"d\",\"cmid\":null,\"body\":\"x\",\"at\":1}").isEmpty(),
                "a msg record without cmid");
        for (String ev : List.of(
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"edit\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"x\",\"at\":1}",
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"msg\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"x\",\"at\":1,\"ref\":3}",
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"recall\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"\",\"at\":1,\"ref\":0}",
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"recall\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"x\",\"at\":1,\"ref\":3}",
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"msg\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"x\",\"at\":1,\"recalled\":true}",
                "{\"conv\":\"c\",\"seq\":4,\"kind\":\"msg\",\"mid\":\"m\",\"sender\":\"u\",\"cmid\":\"k\",\"body\":\"x\",\"at\":1,\"count\":2}")) {
            assertFalse(CONTRACT.violations("event", "{\"t\":\"event\",\"ev\":" + ev + "}").isEmpty(), "the schema accepts the event " + ev);
        }
        for (String bad : List.of(
                "{\"t\":\"edit\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"seq\":0,\"body\":\"x\"}",
                "{\"t\":\"edit\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"seq\":3,\"body\":\"\"}",
                "{\"t\":\"edit\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"body\":\"x\"}",
                "{\"t\":\"recall\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"seq\":0}",
                "{\"t\":\"recall\",\"rid\":\"r\",\"conv\":\"c\",\"seq\":3}",
                "{\"t\":\"recall\",\"rid\":\"r\",\"conv\":\"c\",\"cmid\":\"k\",\"seq\":3,\"body\":\"x\"}")) {
            assertFalse(CONTRACT.violations(readT(bad), bad).isEmpty(), "the schema accepts " + bad);
        }
        String record = "{\"v\":1,\"conv\":\"c\",\"seq\":4,\"mid\":\"m\",\"sender\":\"u\",\"at\":1,";
        for (String rest : List.of(
                "\"kind\":\"edit\",\"device\":\"d\",\"cmid\":\"k\",\"body\":\"x\"}",
                "\"kind\":\"msg\",\"device\":\"d\",\"cmid\":\"k\",\"body\":\"x\",\"ref\":3}",
                "\"kind\":\"recall\",\"device\":null,\"cmid\":\"k\",\"body\":\"\",\"ref\":3}",
                "\"kind\":\"join\",\"device\":null,\"cmid\":null,\"body\":\"\",\"count\":2}",
                "\"kind\":\"leave\",\"device\":null,\"cmid\":null,\"body\":\"\",\"count\":2,\"users\":[\"u\",\"w\"]}")) {
            assertFalse(CONTRACT.violations("eventRecord", record + rest).isEmpty(), "the schema accepts the record " + record + rest);
        }
        assertFalse(CONTRACT.violations("cursorUpdate", "{\"v\":2,\"conv\":\"c\",\"device\":\"d\",\"epoch\":1,\"delivered\":1,\"at\":1}").isEmpty(),
                "an unknown version");
    }

    private static Set<String> names(JsonNode obj) {
        Set<String> s = new TreeSet<>();
        obj.fieldNames().forEachRemaining(s::add);
        return s;
    }

    private static String readT(String json) {
        return read(json).path("t").asText();
    }

    private static JsonNode read(String json) {
        try {
            return JSON.readTree(json);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }
}
