package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.protocol.Event;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class EventRecordTest {
    static final EventRecord MSG = new EventRecord("c-ab", 3, "msg", "01a236a9-8a2f-7a2e-bfb4-3bf7050f5f84", "u-ana", "d-ana",
            "m1", "hello \"x\" ü", 1796213410353L);
    static final EventRecord JOIN = new EventRecord("c-ab", 6, "join", "a13f7da1-1489-4aaa-b467-43a39f67317e", "u-cy", null,
            null, "", 1796213451458L);

    @Test
    void roundTripsAMessageAndAJoin() {
        assertEquals(MSG, EventRecord.read(MSG.toJson()));
        assertEquals(JOIN, EventRecord.read(JOIN.toJson()));
    }

    @Test
    void writesTheDocumentedValueInTheDocumentedOrder() {
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"seq\":6,\"kind\":\"join\",\"mid\":\"a13f7da1-1489-4aaa-b467-43a39f67317e\","
                + "\"sender\":\"u-cy\",\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":1796213451458}", JOIN.toJson());
    }

    @Test
    void readsTheDocumentedExampleAndIgnoresUnknownFields() {
        EventRecord e = EventRecord.read("{\"v\":1,\"conv\":\"c-ab\",\"seq\":7,\"kind\":\"leave\",\"mid\":\"5655af3b\","
                + "\"sender\":\"u-cy\",\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":1796213451572,\"later\":true}");
        assertEquals(new EventRecord("c-ab", 7, "leave", "5655af3b", "u-cy", null, null, "", 1796213451572L), e);
    }

    @Test
    void convertsToTheWireEventWithoutVersionAndDevice() {
        assertEquals(new Event("c-ab", 3, "msg", MSG.mid(), "u-ana", "m1", MSG.body(), 1796213410353L), MSG.toWire());
        Event join = JOIN.toWire();
        assertNull(join.cmid());
        assertEquals("", join.body());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "seq", "kind", "mid", "sender", "device", "cmid", "body", "at"})
    void refusesARecordMissingARequiredField(String field) {
        RecordCases.missing(MSG.toJson(), field, EventRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "seq", "kind", "mid", "sender", "device", "cmid", "body", "at"})
    void refusesARecordWithAMistypedField(String field) {
        RecordCases.mistyped(MSG.toJson(), field, EventRecord::read);
    }

    @Test
    void refusesAFractionalSeqAndAnEmptyConv() {
        RecordCases.refused(MSG.toJson(), o -> o.put("seq", 3.5), "seq", EventRecord::read);
        RecordCases.refused(MSG.toJson(), o -> o.put("conv", ""), "conv", EventRecord::read);
        RecordCases.refused(MSG.toJson(), o -> o.put("seq", 0), "seq", EventRecord::read);
    }

    @Test
    void refusesAnUnknownKind() {
        RecordCases.refused(MSG.toJson(), o -> o.put("kind", "reaction"), "kind", EventRecord::read);
    }

    @Test
    void refusesAnUnknownVersion() {
        RecordCases.refused(MSG.toJson(), o -> o.put("v", 2), "v", EventRecord::read);
    }

    @Test
    void refusesACmidThatContradictsTheKind() {
        RecordCases.refused(MSG.toJson(), o -> o.putNull("cmid"), "cmid", EventRecord::read);
        RecordCases.refused(JOIN.toJson(), o -> o.put("cmid", "m9"), "cmid", EventRecord::read);
    }

    static final EventRecord EDIT = new EventRecord("c-ab", 8, "edit", "0c1c2d3e-1489-4aaa-b467-43a39f67317e", "u-ana", "d-ana",
            "m2", "hello, edited", 1796213451600L, 0, null, 3);

    @Test
    void anEditOrRecallCarriesTheSeqItChangesAfterAtAndTheWireEventToo() {
        assertEquals(EDIT, EventRecord.read(EDIT.toJson()));
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"seq\":8,\"kind\":\"edit\",\"mid\":\"0c1c2d3e-1489-4aaa-b467-43a39f67317e\","
                + "\"sender\":\"u-ana\",\"device\":\"d-ana\",\"cmid\":\"m2\",\"body\":\"hello, edited\",\"at\":1796213451600,"
                + "\"ref\":3}", EDIT.toJson());
        assertEquals(3, EDIT.toWire().ref());
        EventRecord recall = new EventRecord("c-ab", 9, "recall", "1c1c2d3e-1489-4aaa-b467-43a39f67317e", "u-ana", "d-ana",
                "m3", "", 1796213451700L, 0, null, 3);
        assertEquals(recall, EventRecord.read(recall.toJsonNode()), "embedded in a channel record");
        assertTrue(!MSG.toJson().contains("ref"), "a message has no ref");
    }

    @Test
    void refusesARefThatContradictsTheKindOrPointsAtOrAboveItself() {
        RecordCases.refused(EDIT.toJson(), o -> o.remove("ref"), "ref", EventRecord::read);
        RecordCases.refused(EDIT.toJson(), o -> o.put("ref", 8), "ref", EventRecord::read);
        RecordCases.refused(EDIT.toJson(), o -> o.put("ref", 0), "ref", EventRecord::read);
        RecordCases.refused(EDIT.toJson(), o -> o.putNull("cmid"), "cmid", EventRecord::read);
        RecordCases.refused(MSG.toJson(), o -> o.put("ref", 1), "ref", EventRecord::read);
    }

    static final EventRecord BULK = new EventRecord("c-ab", 1, "join", "0b1c2d3e-1489-4aaa-b467-43a39f67317e", "u-ana", null,
            null, "", 1796213451458L, 3, java.util.List.of("u-ana", "u-bo", "u-cy"));

    @Test
    void aBulkJoinRoundTripsWithCountAndUsersLastAndASingleJoinKeepsItsShape() {
        assertEquals(BULK, EventRecord.read(BULK.toJson()));
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"seq\":1,\"kind\":\"join\",\"mid\":\"0b1c2d3e-1489-4aaa-b467-43a39f67317e\","
                + "\"sender\":\"u-ana\",\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":1796213451458,"
                + "\"count\":3,\"users\":[\"u-ana\",\"u-bo\",\"u-cy\"]}", BULK.toJson());
        assertEquals(java.util.List.of("u-ana", "u-bo", "u-cy"), BULK.members());
        assertEquals(java.util.List.of("u-cy"), JOIN.members(), "a single join or leave is about its sender");
        assertTrue(!JOIN.toJson().contains("count") && !JOIN.toJson().contains("users"), JOIN.toJson());
    }

    @Test
    void aCompactBulkJoinKeepsTheCountWithoutTheListAndIsReadOnlyWhenEmbedded() {
        EventRecord compact = BULK.compact();
        assertNull(compact.users());
        assertEquals(3, compact.count());
        assertEquals(compact, EventRecord.read(compact.toJsonNode()), "embedded in a channel record or notice");
        RecordCases.refused(compact.toJson(), o -> { }, "users", EventRecord::read);   // the event topic carries the list
        assertThrows(IllegalStateException.class, compact::members);
        Event wire = BULK.toWire();
        assertEquals(3, wire.count());
        assertEquals("u-ana", wire.sender());
        assertEquals(0, JOIN.toWire().count());
    }

    @Test
    void refusesABulkJoinThatContradictsItself() {
        RecordCases.refused(BULK.toJson(), o -> o.put("count", 4), "users", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.put("count", 1).putArray("users").add("u-ana"), "count", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.put("sender", "u-bo"), "sender", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.putArray("users").add("u-ana").add("u-bo").add("u-ana"), "users", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.putArray("users").add("u-ana").add(7).add("u-cy"), "users", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.put("count", "3"), "count", EventRecord::read);
        RecordCases.refused(BULK.toJson(), o -> o.put("kind", "leave"), "count", EventRecord::read);
        RecordCases.refused(MSG.toJson(), o -> o.put("count", 2).putArray("users").add("u-ana").add("u-bo"), "count", EventRecord::read);
    }

    @Test
    void refusesWhatIsNotAJsonObject() {
        assertThrows(MalformedRecordException.class, () -> EventRecord.read("{\"v\":1,"));
        assertThrows(MalformedRecordException.class, () -> EventRecord.read("[1]"));
        assertThrows(MalformedRecordException.class, () -> EventRecord.read((String) null));
    }
}
