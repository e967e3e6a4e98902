package im.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
