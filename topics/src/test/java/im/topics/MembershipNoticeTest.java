package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MembershipNoticeTest {
    static final MembershipNotice JOIN = MembershipNotice.of(EventRecordTest.JOIN);

    @Test
    void roundTrips() {
        assertEquals(JOIN, MembershipNotice.read(JOIN.toJson()));
        assertTrue(JOIN.isJoin());
        assertEquals("u-cy", JOIN.user());
    }

    @Test
    void isOnlyMadeOfMembershipEvents() {
        assertThrows(IllegalArgumentException.class, () -> MembershipNotice.of(EventRecordTest.MSG));
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "kind", "user", "ev"})
    void refusesANoticeMissingARequiredField(String field) {
        RecordCases.missing(JOIN.toJson(), field, MembershipNotice::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "kind", "user", "ev"})
    void refusesANoticeWithAMistypedField(String field) {
        RecordCases.mistyped(JOIN.toJson(), field, MembershipNotice::read);
    }

    @Test
    void refusesAnUnknownKindAndAMalformedEmbeddedEvent() {
        RecordCases.refused(JOIN.toJson(), o -> o.put("kind", "msg"), "kind", MembershipNotice::read);
        RecordCases.refused(JOIN.toJson(), o -> o.put("kind", "kick"), "kind", MembershipNotice::read);
        RecordCases.refused(JOIN.toJson(), o -> ((com.fasterxml.jackson.databind.node.ObjectNode) o.get("ev")).remove("seq"),
                "seq", MembershipNotice::read);
    }

    @Test
    void refusesANoticeThatContradictsItsEvent() {
        assertThrows(MalformedRecordException.class, () -> MembershipNotice.read(
                RecordCases.tree(JOIN.toJson()).put("user", "u-ana").toString()));
        assertThrows(MalformedRecordException.class, () -> MembershipNotice.read(
                RecordCases.tree(JOIN.toJson()).put("kind", "leave").toString()));
    }

    @Test
    void oneNoticeOfABulkJoinNamesEveryUserItAdded() {
        MembershipNotice bulk = MembershipNotice.of(EventRecordTest.BULK);
        assertEquals(bulk, MembershipNotice.read(bulk.toJson()));
        assertEquals("u-ana", bulk.user());
        assertEquals(java.util.List.of("u-ana", "u-bo", "u-cy"), bulk.users());
        assertEquals(java.util.List.of("u-cy"), JOIN.users());
        RecordCases.refused(bulk.toJson(), o -> ((com.fasterxml.jackson.databind.node.ObjectNode) o.get("ev")).remove("users"),
                "users", MembershipNotice::read);
    }
}
