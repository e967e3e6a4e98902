package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
        RecordCases.refused(MSG.toJson(), o -> o.put("kind", "edit"), "kind", EventRecord::read);
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

    @Test
    void refusesWhatIsNotAJsonObject() {
        assertThrows(MalformedRecordException.class, () -> EventRecord.read("{\"v\":1,"));
        assertThrows(MalformedRecordException.class, () -> EventRecord.read("[1]"));
        assertThrows(MalformedRecordException.class, () -> EventRecord.read((String) null));
    }
}
