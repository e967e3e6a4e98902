package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Edit and recall over a real socket (docs/protocol.md, "Edit and recall"): answered {@code sent}
 * like a send, refused with their codes, and read back by {@code sync} as events of the log, the
 * recalled message as a tombstone.
 */
@ExtendWith(ImStackExtension.class)
class EditRecallIT {
    private Fixture fx;
    private TestStack stack;

    @BeforeEach
    void setUp(TestStack stack) {
        this.stack = stack;
        fx = new Fixture(stack);
    }

    private static String edit(String cmid, long seq, String body) {
        return "{\"t\":\"edit\",\"rid\":\"" + cmid + "\",\"conv\":\"c-ab\",\"cmid\":\"" + cmid + "\",\"seq\":" + seq + ",\"body\":\"" + body + "\"}";
    }

    private static String recall(String cmid, long seq) {
        return "{\"t\":\"recall\",\"rid\":\"" + cmid + "\",\"conv\":\"c-ab\",\"cmid\":\"" + cmid + "\",\"seq\":" + seq + "}";
    }

    @Test
    void anEditAndARecallAreAnsweredLikeASendAndSyncReadsTheTombstone() throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack); RawSocket ana = new RawSocket(gw.ws()); RawSocket bo = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            bo.auth(fx.boToken);
            JsonNode sent = ana.request("{\"t\":\"send\",\"rid\":\"s\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"a secret\"}");
            long msg = sent.get("seq").asLong();
            JsonNode edited = ana.request(edit("m2", msg, "a secret, edited"));
            assertEquals(List.of("sent", msg + 1, false), List.of(edited.get("t").asText(), edited.get("seq").asLong(), edited.get("dup").asBoolean()));
            assertEquals("NOT_SENDER", bo.request(edit("b1", msg, "mine now")).get("code").asText());
            assertEquals("NOT_SENDER", bo.request(recall("b2", msg)).get("code").asText());
            assertEquals("NOT_A_MESSAGE", ana.request(edit("m3", msg + 1, "edit of an edit")).get("code").asText());
            JsonNode recalled = ana.request(recall("m4", msg));
            assertEquals(List.of("sent", msg + 2), List.of(recalled.get("t").asText(), recalled.get("seq").asLong()));
            assertEquals("RECALLED", ana.request(edit("m5", msg, "too late")).get("code").asText());
            JsonNode again = ana.request(recall("m6", msg));
            assertEquals(List.of(msg + 2, true), List.of(again.get("seq").asLong(), again.get("dup").asBoolean()), again.toString());

            JsonNode synced = bo.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"c-ab\",\"after\":0}");
            assertFalse(synced.toString().contains("secret"), "no read returns the body after the recall: " + synced);
            java.util.Map<Long, JsonNode> events = new java.util.HashMap<>();
            synced.get("events").forEach(e -> events.put(e.get("seq").asLong(), e));
            JsonNode tomb = events.get(msg);
            assertEquals(List.of("msg", "", true), List.of(tomb.get("kind").asText(), tomb.get("body").asText(), tomb.get("recalled").asBoolean()));
            JsonNode editEvent = events.get(msg + 1);
            assertEquals(List.of("edit", msg, true), List.of(editEvent.get("kind").asText(), editEvent.get("ref").asLong(),
                    editEvent.get("recalled").asBoolean()));
            JsonNode recallEvent = events.get(msg + 2);
            assertEquals(List.of("recall", msg), List.of(recallEvent.get("kind").asText(), recallEvent.get("ref").asLong()));
            assertFalse(recallEvent.has("recalled"));
            String metrics = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(gw.admin("/metrics")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(metrics.lines().anyMatch(l -> l.startsWith("im_changes_total{") && l.contains("kind=\"recall\"")
                    && l.contains("outcome=\"dup\"") && l.endsWith(" 1.0")), "im_changes_total counts the dup recall:\n" + metrics);
        }
    }

    @Test
    void badEditAndRecallFramesAreRefusedWithTheirCodes() throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack); RawSocket ana = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            assertEquals("BAD_FIELD", ana.request(edit("m1", 0, "x")).get("code").asText());
            assertEquals("BAD_FIELD", ana.request(edit("m1", 1, "")).get("code").asText());
            assertEquals("NOT_A_MESSAGE", ana.request(recall("m1", 1)).get("code").asText(), "seq 1 is a join");
            assertEquals("NOT_A_MESSAGE", ana.request(recall("m1", 999)).get("code").asText(), "above the head");
        }
        assertEquals(0, fx.count("SELECT count(*) FROM events WHERE kind IN ('edit', 'recall')"));
    }
}
