package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ChannelRecordTest {
    static final ChannelRecord.Push PUSH = new ChannelRecord.Push(List.of("d-ana", "d-bo"), Map.of("d-bo", 3L), EventRecordTest.MSG);
    static final ChannelRecord.HintFor HINT = new ChannelRecord.HintFor(List.of("d-bo"), "c-ab", 8, "sweep");

    @Test
    void roundTripsAPushWithAndWithoutFromAndAHint() {
        assertEquals(PUSH, ChannelRecord.read(PUSH.toJson()));
        ChannelRecord.Push bare = new ChannelRecord.Push(List.of("d-ana"), Map.of(), EventRecordTest.JOIN);
        assertEquals(bare, ChannelRecord.read(bare.toJson()));
        assertEquals(HINT, ChannelRecord.read(HINT.toJson()));
        assertEquals("{\"v\":1,\"devices\":[\"d-bo\"],\"hint\":{\"conv\":\"c-ab\",\"head\":8,\"why\":\"sweep\"}}", HINT.toJson());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "devices"})
    void refusesAPushMissingARequiredField(String field) {
        RecordCases.missing(PUSH.toJson(), field, ChannelRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "devices", "from", "ev"})
    void refusesAPushWithAMistypedField(String field) {
        RecordCases.mistyped(PUSH.toJson(), field, ChannelRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"conv", "head", "why"})
    void refusesAHintMissingOrMistypingAField(String field) {
        RecordCases.refused(HINT.toJson(), o -> ((ObjectNode) o.get("hint")).remove(field), field, ChannelRecord::read);
        RecordCases.refused(HINT.toJson(), o -> ((ObjectNode) o.get("hint")).put(field, field.equals("head") ? "8" : "")
                , field, ChannelRecord::read);
    }

    @Test
    void refusesARecordWithNeitherOrBothOfEvAndHint() {
        assertThrows(MalformedRecordException.class, () -> ChannelRecord.read(RecordCases.tree(PUSH.toJson()).without("ev").toString()));
        ObjectNode both = RecordCases.tree(PUSH.toJson());
        both.set("hint", RecordCases.tree(HINT.toJson()).get("hint"));
        assertThrows(MalformedRecordException.class, () -> ChannelRecord.read(both.toString()));
    }

    static final ChannelRecord.TypingFor TYPING = new ChannelRecord.TypingFor(List.of("d-bo", "d-cy"), "c-ab", "u-ana");

    @Test
    void aTypingRoundTripsAndIsRefusedWithAnotherKindOrWithoutItsUser() {
        assertEquals(TYPING, ChannelRecord.read(TYPING.toJson()));
        assertEquals("{\"v\":1,\"devices\":[\"d-bo\",\"d-cy\"],\"typing\":{\"conv\":\"c-ab\",\"user\":\"u-ana\"}}", TYPING.toJson());
        RecordCases.refused(TYPING.toJson(), o -> ((ObjectNode) o.get("typing")).remove("user"), "user", ChannelRecord::read);
        ObjectNode both = RecordCases.tree(TYPING.toJson());
        both.set("hint", RecordCases.tree(HINT.toJson()).get("hint"));
        assertThrows(MalformedRecordException.class, () -> ChannelRecord.read(both.toString()));
    }

    @Test
    void aTypingRecordRoundTripsAndNamesAMissingField() {
        TypingRecord t = new TypingRecord("c-ab", "u-ana", "d-ana", 1796213410353L);
        assertEquals(t, TypingRecord.read(t.toJson()));
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"user\":\"u-ana\",\"device\":\"d-ana\",\"at\":1796213410353}", t.toJson());
        for (String f : List.of("v", "conv", "user", "device", "at")) RecordCases.missing(t.toJson(), f, TypingRecord::read);
    }

    @Test
    void refusesAnEmptyDeviceListAMistypedFromEntryAndAMalformedEvent() {
        RecordCases.refused(PUSH.toJson(), o -> o.putArray("devices"), "devices", ChannelRecord::read);
        RecordCases.refused(PUSH.toJson(), o -> ((ObjectNode) o.get("from")).put("d-bo", "3"), "from.d-bo", ChannelRecord::read);
        RecordCases.refused(PUSH.toJson(), o -> ((ObjectNode) o.get("ev")).put("kind", "reaction"), "kind", ChannelRecord::read);
    }
}
