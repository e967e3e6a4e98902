package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The read cursor over real sockets (docs/protocol.md, "Read state and unread counts"): two
 * devices of bo and one of ana in c-ab. A read on one of bo's devices is answered with the read
 * state and reaches the other as an {@code unread} push through the notices topic (Kafka, no
 * delivery node needed); {@code subbed} carries the state, also from a gateway started afterwards.
 */
@ExtendWith(ImStackExtension.class)
class ReadStateIT {
    private Fixture fx;
    private TestStack stack;
    private String bo2Token;

    @BeforeEach
    void setUp(TestStack stack) {
        stack.kafkaBootstrap();   // the notices topic carries reads to the user's other devices
        this.stack = stack;
        fx = new Fixture(stack);
        bo2Token = fx.dir.registerDevice("u-bo", "d-bo2").token();
    }

    private static String send(String cmid) {
        return "{\"t\":\"send\",\"rid\":\"" + cmid + "\",\"conv\":\"c-ab\",\"cmid\":\"" + cmid + "\",\"body\":\"body of " + cmid + "\"}";
    }

    private static String read(long seq) {
        return "{\"t\":\"read\",\"rid\":\"r" + seq + "\",\"conv\":\"c-ab\",\"seq\":" + seq + "}";
    }

    private static JsonNode subbedEntry(RawSocket s) throws Exception {
        JsonNode subbed = s.request("{\"t\":\"sub\",\"rid\":\"s1\"}");
        assertEquals("subbed", subbed.get("t").asText(), subbed.toString());
        return subbed.get("convs").get(0);
    }

    private static void assertState(JsonNode frame, long read, long unread, long head) {
        assertEquals(read, frame.get("read").asLong(), frame.toString());
        assertEquals(unread, frame.get("unread").asLong(), frame.toString());
        assertEquals(head, frame.get("head").asLong(), frame.toString());
    }

    @Test
    void aReadOnOneDeviceBringsTheOtherDevicesCountDownAndSubTellsIt() throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack);
             RawSocket ana = new RawSocket(gw.ws()); RawSocket bo1 = new RawSocket(gw.ws()); RawSocket bo2 = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            bo1.auth(fx.boToken);
            bo2.auth(bo2Token);
            subbedEntry(bo2);   // bo2's connection now gets its user's notices
            for (int i = 0; i < 50; i++) ana.request(send("m" + i));   // seqs 3..52
            JsonNode entry = subbedEntry(bo1);
            assertEquals(52, entry.get("head").asLong());
            assertEquals(0, entry.get("read").asLong());
            assertEquals(50, entry.get("unread").asLong(), entry.toString());
            assertEquals(0, subbedEntry(ana).get("unread").asLong(), "ana's own messages are never unread to her");

            JsonNode ack = bo1.request(read(40));
            assertEquals("readack", ack.get("t").asText(), ack.toString());
            assertState(ack, 40, 12, 52);
            JsonNode pushed = bo2.next();
            assertEquals("unread", pushed.get("t").asText(), pushed.toString());
            assertEquals("c-ab", pushed.get("conv").asText());
            assertState(pushed, 40, 12, 52);

            assertState(bo2.request(read(52)), 52, 0, 52);
            assertState(bo1.next(), 52, 0, 52);                   // now bo1 is the other device
            assertState(bo1.request(read(30)), 52, 0, 52);        // a lower read leaves the cursor
            assertNull(bo2.poll(Duration.ofMillis(300)), "a read that moves nothing is not pushed");
            assertEquals("CURSOR_AHEAD", bo1.request(read(53)).get("code").asText());
        }
        // A gateway started afterwards tells the same state: it is in PostgreSQL, not in the gateway.
        try (InProcessGateway again = new InProcessGateway(stack); RawSocket bo2 = new RawSocket(again.ws())) {
            bo2.auth(bo2Token);
            JsonNode entry = subbedEntry(bo2);
            assertEquals(52, entry.get("read").asLong());
            assertEquals(0, entry.get("unread").asLong());
        }
    }

    @Test
    void aReadIsRefusedToAStrangerAndForBadFields() throws Exception {
        try (InProcessGateway gw = new InProcessGateway(stack); RawSocket cy = new RawSocket(gw.ws())) {
            cy.auth(fx.cyToken);
            assertEquals("NOT_MEMBER", cy.request(read(1)).get("code").asText());
            assertEquals("BAD_FIELD", cy.request("{\"t\":\"read\",\"rid\":\"r\",\"conv\":\"c-ab\",\"seq\":-1}").get("code").asText());
            assertEquals("MISSING_FIELD", cy.request("{\"t\":\"read\",\"rid\":\"r\",\"conv\":\"c-ab\"}").get("code").asText());
        }
        assertEquals(0, fx.count("SELECT count(*) FROM read_cursors"));
    }
}
