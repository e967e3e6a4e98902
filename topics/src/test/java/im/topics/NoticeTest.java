package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.protocol.ReadState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class NoticeTest {
    static final ReadNotice READ = new ReadNotice("c-ab", "u-bo", "d-bo", new ReadState(7, 2, 9));

    @Test
    void readsEachKindAsItsOwnRecord() {
        assertEquals(READ, Notice.read(READ.toJson()));
        assertEquals(MembershipNoticeTest.JOIN, Notice.read(MembershipNoticeTest.JOIN.toJson()));
    }

    @Test
    void writesTheDocumentedValue() {
        assertEquals("{\"v\":1,\"kind\":\"read\",\"conv\":\"c-ab\",\"user\":\"u-bo\",\"device\":\"d-bo\",\"read\":7,\"unread\":2,\"head\":9}",
                READ.toJson());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "kind", "conv", "user", "device", "read", "unread", "head"})
    void refusesAReadNoticeMissingAField(String field) {
        RecordCases.missing(READ.toJson(), field, Notice::read);
    }

    @Test
    void refusesAnUnknownKindAndANegativeCount() {
        RecordCases.refused(READ.toJson(), o -> o.put("kind", "typing"), "kind", Notice::read);
        assertThrows(MalformedRecordException.class, () -> Notice.read(READ.toJson().replace("\"unread\":2", "\"unread\":-1")));
    }
}
