package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CursorRecordTest {
    static final CursorRecord.Update UPDATE = new CursorRecord.Update("c-ab", "d-bo", 1, 4, 1796213414301L);
    static final CursorRecord.Deleted DELETED = new CursorRecord.Deleted("c-ab", "d-bo");

    @Test
    void roundTripsAnUpdateAndADeletion() {
        assertEquals(UPDATE, CursorRecord.read(UPDATE.toJson()));
        assertEquals(DELETED, CursorRecord.read(DELETED.toJson()));
    }

    @Test
    void writesTheDocumentedValues() {
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"epoch\":1,\"delivered\":4,\"at\":1796213414301}", UPDATE.toJson());
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"deleted\":true}", DELETED.toJson());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device", "epoch", "delivered", "at"})
    void refusesAnUpdateMissingARequiredField(String field) {
        RecordCases.missing(UPDATE.toJson(), field, CursorRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device", "epoch", "delivered", "at"})
    void refusesAnUpdateWithAMistypedField(String field) {
        RecordCases.mistyped(UPDATE.toJson(), field, CursorRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device"})
    void refusesADeletionMissingARequiredField(String field) {
        RecordCases.missing(DELETED.toJson(), field, CursorRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device", "deleted"})
    void refusesADeletionWithAMistypedField(String field) {
        RecordCases.mistyped(DELETED.toJson(), field, CursorRecord::read);
    }

    @Test
    void refusesDeletedFalseAndAnEpochBeyondInt() {
        RecordCases.refused(DELETED.toJson(), o -> o.put("deleted", false), "deleted", CursorRecord::read);
        RecordCases.refused(UPDATE.toJson(), o -> o.put("epoch", 1L << 40), "epoch", CursorRecord::read);
    }
}
