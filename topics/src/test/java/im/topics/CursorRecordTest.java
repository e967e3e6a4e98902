package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CursorRecordTest {
    static final CursorRecord.Update UPDATE = new CursorRecord.Update("c-ab", "d-bo", 1, 4, 1796213414301L);
    static final CursorRecord.Deleted DELETED = new CursorRecord.Deleted("c-ab", "d-bo", 2);
    static final CursorRecord.Deleted LEGACY_DELETED = new CursorRecord.Deleted("c-ab", "d-bo", CursorRecord.Deleted.ANY_EPOCH);
    static final CursorRecord.Read READ = new CursorRecord.Read("c-ab", "u-bo", 7, 1796213414302L);

    @Test
    void roundTripsAnUpdateAndADeletion() {
        assertEquals(UPDATE, CursorRecord.read(UPDATE.toJson()));
        assertEquals(DELETED, CursorRecord.read(DELETED.toJson()));
        assertEquals(LEGACY_DELETED, CursorRecord.read(LEGACY_DELETED.toJson()));
        assertEquals(READ, CursorRecord.read(READ.toJson()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "read", "at"})
    void refusesAReadMissingARequiredField(String field) {
        RecordCases.missing(READ.toJson(), field, CursorRecord::read);
    }

    @Test
    void refusesANegativeReadCursor() {
        RecordCases.refused(READ.toJson(), o -> o.put("read", -1), "read", CursorRecord::read);
    }

    @Test
    void aDeletionRemovesOnlyCursorsOfOlderInstallsUnlessItNamesNoEpoch() {
        assertTrue(DELETED.removes(1));
        assertFalse(DELETED.removes(2));   // the new install's own cursor, possibly published first
        assertFalse(DELETED.removes(3));
        assertTrue(LEGACY_DELETED.removes(7));
    }

    @Test
    void writesTheDocumentedValues() {
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"epoch\":1,\"delivered\":4,\"at\":1796213414301}", UPDATE.toJson());
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"deleted\":true,\"epoch\":2}", DELETED.toJson());
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"deleted\":true}", LEGACY_DELETED.toJson());
        assertEquals("{\"v\":1,\"conv\":\"c-ab\",\"user\":\"u-bo\",\"read\":7,\"at\":1796213414302}", READ.toJson());
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
    @ValueSource(strings = {"v", "conv", "device", "deleted", "epoch"})
    void refusesADeletionWithAMistypedField(String field) {
        RecordCases.mistyped(DELETED.toJson(), field, CursorRecord::read);
    }

    @Test
    void refusesDeletedFalseAndAnEpochBeyondInt() {
        RecordCases.refused(DELETED.toJson(), o -> o.put("deleted", false), "deleted", CursorRecord::read);
        RecordCases.refused(UPDATE.toJson(), o -> o.put("epoch", 1L << 40), "epoch", CursorRecord::read);
        RecordCases.refused(DELETED.toJson(), o -> o.put("epoch", 0), "epoch", CursorRecord::read);
    }
}
