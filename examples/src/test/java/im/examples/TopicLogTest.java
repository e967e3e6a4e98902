package im.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class TopicLogTest {
    static String msg(String conv, long seq, String body) {
        return "{\"v\":1,\"conv\":\"" + conv + "\",\"seq\":" + seq + ",\"kind\":\"msg\",\"mid\":\"m-" + conv + seq
                + "\",\"sender\":\"u-ana\",\"device\":\"d-ana\",\"cmid\":\"k" + seq + "\",\"body\":\"" + body + "\",\"at\":1796213410353}";
    }

    @Test
    void identicalDuplicatesAreDroppedAndTheLogIsBySeqWhateverTheArrivalOrder() {
        TopicLog log = new TopicLog();
        log.add("c1", msg("c1", 2, "b"), 0, 0);
        log.add("c1", msg("c1", 1, "a"), 0, 1);
        log.add("c1", msg("c1", 2, "b"), 0, 2);
        assertEquals(List.of(1L, 2L), List.copyOf(log.events().get("c1").keySet()));
        assertEquals(3, log.records());
        assertEquals(1, log.duplicates());
        assertTrue(log.conflicts().isEmpty());
        assertTrue(log.gaps().isEmpty());
        assertEquals(new TopicLog.Position(0, 0), log.positionOf("c1", 2), "the first record is kept");
    }

    @Test
    void aDuplicateWithOtherContentIsAConflict() {
        TopicLog log = new TopicLog();
        log.add("c1", msg("c1", 1, "a"), 0, 0);
        log.add("c1", msg("c1", 1, "forged"), 0, 5);
        assertEquals(1, log.conflicts().size());
        TopicLog.Conflict c = log.conflicts().get(0);
        assertEquals(List.of("body"), c.fields());
        assertEquals("a", c.kept().event().body());
        assertEquals(5, c.other().at().offset());
    }

    @Test
    void gapsAreReportedFromSeqOne() {
        TopicLog log = new TopicLog();
        for (long seq : new long[] {3, 4, 7, 9}) log.add("c1", msg("c1", seq, "x"), 0, seq);
        log.add("c2", msg("c2", 1, "x"), 1, 0);
        assertEquals(List.of(new TopicLog.Gap("c1", 1, 2), new TopicLog.Gap("c1", 5, 6), new TopicLog.Gap("c1", 8, 8)),
                log.gaps());
    }

    @Test
    void recordsOffTheSchemaAreMalformedWithTheReason() {
        TopicLog log = new TopicLog();
        log.add("c1", "{not json", 0, 0);
        log.add("c1", msg("c1", 1, "a").replace("\"v\":1", "\"v\":2"), 0, 1);
        log.add("c2", msg("c1", 1, "a"), 0, 2);
        log.add("c1", msg("c1", 1, "a").replace(",\"cmid\":\"k1\"", ""), 0, 3);
        log.add("c1", msg("c1", 1, "a").replace("\"seq\":1", "\"seq\":\"1\""), 0, 4);
        log.add("c1", msg("c1", 1, "a").replace("\"body\":\"a\"", "\"body\":null"), 0, 5);
        log.add("c1", null, 0, 6);
        List<String> reasons = log.malformed().stream().map(TopicLog.Malformed::reason).toList();
        assertEquals(7, reasons.size(), reasons.toString());
        assertTrue(reasons.get(0).startsWith("not JSON"), reasons.get(0));
        assertEquals("schema version v=2, this reader knows v=1", reasons.get(1));
        assertEquals("key \"c2\" differs from conv \"c1\"", reasons.get(2));
        assertEquals("field cmid is absent", reasons.get(3));
        assertEquals("field seq is string, expected an int64", reasons.get(4));
        assertEquals("field body is null, expected a string", reasons.get(5));
        assertEquals("value is not a JSON object", reasons.get(6));
        assertTrue(log.events().isEmpty());
    }

    @Test
    void joinAndLeaveHaveNullDeviceAndCmidAndUnknownFieldsAndKindsAreAccepted() {
        TopicLog log = new TopicLog();
        log.add("c1", "{\"v\":1,\"conv\":\"c1\",\"seq\":1,\"kind\":\"join\",\"mid\":\"m\",\"sender\":\"u-cy\","
                + "\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":1,\"later\":true}", 0, 0);
        log.add("c1", "{\"v\":1,\"conv\":\"c1\",\"seq\":2,\"kind\":\"poll\",\"mid\":\"m2\",\"sender\":\"u-cy\","
                + "\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":2}", 0, 1);
        assertTrue(log.malformed().isEmpty(), log.malformed().toString());
        Event join = log.events().get("c1").get(1L);
        assertNull(join.device());
        assertNull(join.cmid());
        assertEquals("poll", log.events().get("c1").get(2L).kind());
        assertFalse(log.contains("c1", 3));
    }
}
