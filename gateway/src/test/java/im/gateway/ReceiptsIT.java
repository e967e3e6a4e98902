package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Receipts over a real socket (docs/protocol.md, "Receipts"): derived from the delivered and read
 * cursors at the time of asking, counting the members other than the sender who may see each
 * message and those members' devices; only for the asker's own messages.
 */
@ExtendWith(ImStackExtension.class)
class ReceiptsIT {
    private Fixture fx;
    private TestStack stack;
    private String tabletToken;

    @BeforeEach
    void setUp(TestStack stack) {
        this.stack = stack;
        fx = new Fixture(stack);
        fx.dir.createUser("u-dan", "Dan");
        tabletToken = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        fx.dir.createConversation("g", "group", List.of("u-ana", "u-bo", "u-cy"));   // seq 1
    }

    private static String send(String cmid) {
        return "{\"t\":\"send\",\"rid\":\"" + cmid + "\",\"conv\":\"g\",\"cmid\":\"" + cmid + "\",\"body\":\"b\"}";
    }

    private static List<List<Long>> receipts(RawSocket s, long... seqs) throws Exception {
        StringBuilder list = new StringBuilder();
        for (long q : seqs) list.append(list.length() == 0 ? "" : ",").append(q);
        JsonNode r = s.request("{\"t\":\"receipts\",\"rid\":\"q\",\"conv\":\"g\",\"seqs\":[" + list + "]}");
        assertEquals("receipts", r.get("t").asText(), r.toString());
        List<List<Long>> out = new ArrayList<>();
        for (JsonNode x : r.get("receipts")) {
            out.add(List.of(x.get("seq").asLong(), x.get("members").asLong(), x.get("read").asLong(), x.get("devices").asLong(),
                    x.get("delivered").asLong()));
        }
        return out;
    }

    @Test
    void receiptsCountTheOtherMembersReadsAndTheirDevicesDeliveriesAsTheCursorsSayNow() throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack);
             RawSocket ana = new RawSocket(gw.ws()); RawSocket phone = new RawSocket(gw.ws());
             RawSocket tablet = new RawSocket(gw.ws()); RawSocket cy = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            phone.auth(fx.boToken);
            tablet.auth(tabletToken);
            cy.auth(fx.cyToken);
            long first = ana.request(send("m1")).get("seq").asLong();    // 2
            long second = ana.request(send("m2")).get("seq").asLong();   // 3
            assertEquals(List.of(List.of(first, 2L, 0L, 3L, 0L), List.of(second, 2L, 0L, 3L, 0L)), receipts(ana, first, second),
                    "bo and cy may see both; bo's two devices and cy's one; nothing delivered or read yet");

            phone.request("{\"t\":\"ack\",\"rid\":\"a\",\"conv\":\"g\",\"seq\":" + first + "}");
            cy.request("{\"t\":\"ack\",\"rid\":\"a\",\"conv\":\"g\",\"seq\":" + second + "}");
            cy.request("{\"t\":\"read\",\"rid\":\"r\",\"conv\":\"g\",\"seq\":" + first + "}");
            assertEquals(List.of(List.of(second, 2L, 0L, 3L, 1L), List.of(first, 2L, 1L, 3L, 2L)), receipts(ana, second, first),
                    "in the order asked: the first delivered to the phone and cy, read by cy");

            fx.dir.removeMember("g", "u-cy");   // 4: cy could see both, and still counts for them
            fx.dir.addMember("g", "u-dan");     // 5: dan could not
            long third = ana.request(send("m3")).get("seq").asLong();   // 6
            assertEquals(List.of(List.of(first, 2L, 1L, 3L, 2L), List.of(third, 2L, 0L, 2L, 0L)), receipts(ana, first, third),
                    "the third is for bo and dan (who has no device), not for cy");

            long bos = phone.request(send("b1")).get("seq").asLong();
            JsonNode refused = ana.request("{\"t\":\"receipts\",\"rid\":\"q\",\"conv\":\"g\",\"seqs\":[" + first + "," + bos + "]}");
            assertEquals("NOT_SENDER", refused.get("code").asText(), "only the sender asks: " + refused);
            assertEquals("NOT_SENDER", ana.request("{\"t\":\"receipts\",\"rid\":\"q\",\"conv\":\"g\",\"seqs\":[1]}").get("code").asText(),
                    "a join is no message of hers");
            assertEquals("NOT_SENDER", ana.request("{\"t\":\"receipts\",\"rid\":\"q\",\"conv\":\"nope\",\"seqs\":[1]}").get("code").asText());
        }
    }
}
