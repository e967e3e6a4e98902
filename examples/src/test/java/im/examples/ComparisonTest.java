package im.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ComparisonTest {
    private static Event ev(String conv, long seq, String body) {
        return new Event(conv, seq, "msg", "m-" + conv + seq, "u-ana", "d-ana", "k" + seq, body, 1000 + seq);
    }

    private static Map<String, NavigableMap<Long, Event>> history(Event... events) {
        Map<String, NavigableMap<Long, Event>> h = new TreeMap<>();
        for (Event e : events) h.computeIfAbsent(e.conv(), c -> new TreeMap<>()).put(e.seq(), e);
        return h;
    }

    @Test
    void equalHistoriesMatch() {
        assertTrue(Comparison.of(history(ev("c1", 1, "a"), ev("c2", 1, "b")),
                history(ev("c1", 1, "a"), ev("c2", 1, "b"))).matches());
    }

    @Test
    void missingExtraAndMismatchedAreToldApart() {
        Comparison c = Comparison.of(
                history(ev("c1", 1, "a"), ev("c1", 2, "changed"), ev("c1", 4, "forged"), ev("c9", 1, "x")),
                history(ev("c1", 1, "a"), ev("c1", 2, "b"), ev("c1", 3, "c"), ev("c2", 1, "d")));
        assertEquals(List.of(ev("c1", 3, "c"), ev("c2", 1, "d")), c.missing());
        assertEquals(List.of(ev("c1", 4, "forged"), ev("c9", 1, "x")), c.extra());
        assertEquals(1, c.mismatched().size());
        assertEquals(List.of("body"), c.mismatched().get(0).fields());
        assertEquals("b", c.mismatched().get(0).database().body());
    }

    @Test
    void everyFieldIsCompared() {
        Event a = ev("c1", 1, "a");
        Event b = new Event("c1", 1, "join", "other", "u-bo", null, null, "", 7);
        assertEquals(List.of("kind", "mid", "sender", "device", "cmid", "body", "at"), a.differences(b));
    }

    @Test
    void aBulkJoinsUsersAreComparedAndReadStrictly() throws Exception {
        Event bulk = new Event("c1", 1, "join", "m", "u-ana", null, null, "", 7, List.of("u-ana", "u-bo"));
        Event other = new Event("c1", 1, "join", "m", "u-ana", null, null, "", 7, List.of("u-ana", "u-cy"));
        assertEquals(List.of("users"), bulk.differences(other));
        assertEquals(List.of("users"), bulk.differences(new Event("c1", 1, "join", "m", "u-ana", null, null, "", 7)),
                "a bulk join whose list went missing differs");
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        String value = "{\"v\":1,\"conv\":\"c1\",\"seq\":1,\"kind\":\"join\",\"mid\":\"m\",\"sender\":\"u-ana\","
                + "\"device\":null,\"cmid\":null,\"body\":\"\",\"at\":7,\"count\":2,\"users\":[\"u-ana\",\"u-bo\"]}";
        assertEquals(bulk, Event.fromJson("c1", json.readTree(value)));
        org.junit.jupiter.api.Assertions.assertThrows(Event.BadRecordException.class,
                () -> Event.fromJson("c1", json.readTree(value.replace("\"count\":2", "\"count\":3"))));
    }

    @Test
    void aBodyARecallEmptiedInPostgresIsRecalledNotMismatchedButOnlyWhenPostgresSaysSo() {
        Event original = ev("c1", 3, "secret");
        Event emptied = new Event("c1", 3, "msg", "m-c13", "u-ana", "d-ana", "k3", "", 1003, null, 0, 9);
        Comparison c = Comparison.of(history(original), history(emptied));
        assertTrue(c.matches());
        assertEquals(List.of(new Comparison.Recalled(original, emptied)), c.recalled());
        assertTrue(Comparison.of(history(emptied), history(emptied)).recalled().isEmpty(), "a record published after the recall is identical");

        Comparison notRecalled = Comparison.of(history(original), history(ev("c1", 3, "")));
        assertFalse(notRecalled.matches(), "an emptied body without recalled_by is a mismatch");
        Event alsoOtherMid = new Event("c1", 3, "msg", "other", "u-ana", "d-ana", "k3", "", 1003, null, 0, 9);
        Comparison more = Comparison.of(history(original), history(alsoOtherMid));
        assertEquals(List.of("mid", "body"), more.mismatched().get(0).fields(), "a recall changes the body only");
        assertTrue(more.recalled().isEmpty());
    }

    @Test
    void anEditsRefIsReadStrictlyAndCompared() throws Exception {
        Event edit = new Event("c1", 5, "edit", "m", "u-ana", "d-ana", "k5", "new", 7, null, 3, 0);
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        String value = "{\"v\":1,\"conv\":\"c1\",\"seq\":5,\"kind\":\"edit\",\"mid\":\"m\",\"sender\":\"u-ana\","
                + "\"device\":\"d-ana\",\"cmid\":\"k5\",\"body\":\"new\",\"at\":7,\"ref\":3}";
        assertEquals(edit, Event.fromJson("c1", json.readTree(value)));
        for (String bad : List.of("\"ref\":5", "\"ref\":0", "\"ref\":\"3\"")) {
            assertThrows(Event.BadRecordException.class, () -> Event.fromJson("c1", json.readTree(value.replace("\"ref\":3", bad))), bad);
        }
        assertEquals(List.of("ref"), edit.differences(new Event("c1", 5, "edit", "m", "u-ana", "d-ana", "k5", "new", 7, null, 2, 0)));
        assertEquals(List.of(), edit.differences(new Event("c1", 5, "edit", "m", "u-ana", "d-ana", "k5", "new", 7, null, 3, 9)),
                "recalled_by is PostgreSQL's only, not compared");
    }
}
