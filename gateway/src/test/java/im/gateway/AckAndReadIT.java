package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Acks (D3, D4) and the read path (sub, sync with visibility periods) over real sockets. */
@ExtendWith(ImStackExtension.class)
class AckAndReadIT {
    private Fixture fx;
    private InProcessGateway gw;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        gw = new InProcessGateway(stack);
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private static String send(String conv, String cmid) {
        return "{\"t\":\"send\",\"rid\":\"" + cmid + "\",\"conv\":\"" + conv + "\",\"cmid\":\"" + cmid + "\",\"body\":\"body of " + cmid + "\"}";
    }

    private static String ack(String conv, long seq) {
        return "{\"t\":\"ack\",\"rid\":\"k" + seq + "\",\"conv\":\"" + conv + "\",\"seq\":" + seq + "}";
    }

    private long cursor(String device, String conv) {
        return fx.count("SELECT COALESCE((SELECT delivered_seq FROM device_cursors WHERE device_id = ? AND conv_id = ?), -1)", device, conv);
    }

    @Test
    void ackIsMonotonicAndBoundedByHead() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws()); RawSocket bo = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            bo.auth(fx.boToken);
            for (int i = 0; i < 5; i++) ana.request(send("c-ab", "m" + i));   // seqs 3..7
            assertEquals(7, fx.head("c-ab"));
            JsonNode a7 = bo.request(ack("c-ab", 7));
            assertEquals("acked", a7.get("t").asText());
            assertEquals(7, a7.get("delivered").asLong());
            JsonNode a1 = bo.request(ack("c-ab", 1));
            assertEquals(7, a1.get("delivered").asLong(), "the merged value, not the request's");
            assertEquals(7, cursor("d-bo", "c-ab"));
            JsonNode ahead = bo.request(ack("c-ab", 107));
            assertEquals("CURSOR_AHEAD", ahead.get("code").asText());
            assertEquals(7, cursor("d-bo", "c-ab"), "a refused ack changes nothing");
        }
    }

    @Test
    void ackByNonMemberIsRefused() throws Exception {
        try (RawSocket cy = new RawSocket(gw.ws())) {
            cy.auth(fx.cyToken);
            assertEquals("NOT_MEMBER", cy.request(ack("c-ab", 1)).get("code").asText());
            assertEquals("NOT_MEMBER", cy.request(ack("c-none", 0)).get("code").asText());
        }
        assertEquals(-1, cursor("d-cy", "c-ab"));
    }

    @Test
    void subListsConversationsWithHeadAndCursor() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws()); RawSocket cy = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            ana.request(send("c-ab", "m1"));
            ana.request(ack("c-ab", 2));
            JsonNode subbed = ana.request("{\"t\":\"sub\",\"rid\":\"s1\"}");
            assertEquals("subbed", subbed.get("t").asText());
            JsonNode c = subbed.get("convs").get(0);
            assertEquals("c-ab", c.get("conv").asText());
            assertEquals(3, c.get("head").asLong());
            assertEquals(2, c.get("delivered").asLong());
            cy.auth(fx.cyToken);
            assertEquals(0, cy.request("{\"t\":\"sub\",\"rid\":\"s1\"}").get("convs").size());
        }
    }

    @Test
    void syncPagesWithoutRepeatOrSkipWhileMessagesArrive() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws()); RawSocket bo = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            bo.auth(fx.boToken);
            for (int i = 0; i < 10; i++) ana.request(send("c-ab", "a" + i));   // seqs 3..12
            List<Long> seen = new ArrayList<>();
            long after = 0;
            int round = 0;
            while (true) {
                JsonNode page = bo.request("{\"t\":\"sync\",\"rid\":\"y" + round + "\",\"conv\":\"c-ab\",\"after\":" + after + ",\"limit\":3}");
                for (JsonNode e : page.get("events")) seen.add(e.get("seq").asLong());
                if (page.get("events").size() > 0) after = seen.get(seen.size() - 1);
                if (round < 4) ana.request(send("c-ab", "late" + round));   // new messages while paging
                round++;
                if (!page.get("more").asBoolean()) {
                    if (after == fx.head("c-ab")) break;
                }
                assertTrue(round < 50);
            }
            List<Long> expected = new ArrayList<>();
            // bo joined at seq 2: ana's join (seq 1) is outside bo's visibility period.
            for (long s = 2; s <= fx.head("c-ab"); s++) expected.add(s);
            assertEquals(expected, seen, "every event once, in order");
        }
    }

    @Test
    void visibilityFollowsJoinAndLeaveEvents() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws()); RawSocket cy = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            cy.auth(fx.cyToken);
            ana.request(send("c-ab", "before-join"));        // 3, cy cannot see it
            long join = fx.dir.addMember("c-ab", "u-cy").seq();   // 4
            ana.request(send("c-ab", "while-member"));       // 5
            long leave = fx.dir.removeMember("c-ab", "u-cy").seq(); // 6
            ana.request(send("c-ab", "after-leave"));        // 7
            JsonNode page = cy.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"c-ab\",\"after\":0}");
            List<Long> seqs = new ArrayList<>();
            for (JsonNode e : page.get("events")) seqs.add(e.get("seq").asLong());
            assertEquals(List.of(join, 5L, leave), seqs);
            assertEquals("join", page.get("events").get(0).get("kind").asText());
            assertEquals("leave", page.get("events").get(2).get("kind").asText());
            assertFalse(page.get("more").asBoolean());
            assertEquals(leave, page.get("head").asLong(), "a former member is told its leave as the head, not what came after");
            // A removed member can no longer send. Sub still lists the conversation while this
            // device has not acknowledged everything up to the leave (it may have been offline
            // through the events it could see), and no longer once it has.
            assertEquals("NOT_MEMBER", cy.request(send("c-ab", "sneaky")).get("code").asText());
            JsonNode left = cy.request("{\"t\":\"sub\",\"rid\":\"s\"}").get("convs");
            assertEquals(1, left.size(), left.toString());
            assertEquals("c-ab", left.get(0).get("conv").asText());
            assertEquals(leave, left.get(0).get("head").asLong(), "the head of a left conversation is the leave");
            assertEquals(0, left.get(0).get("delivered").asLong());
            assertEquals(leave, cy.request(ack("c-ab", leave)).get("delivered").asLong());
            assertEquals(0, cy.request("{\"t\":\"sub\",\"rid\":\"s2\"}").get("convs").size(),
                    "everything up to the leave acknowledged: no longer listed");
            // Never a member: refused outright.
            fx.dir.createConversation("c-private", "group", List.of("u-ana"));
            assertEquals("NOT_MEMBER", cy.request("{\"t\":\"sync\",\"rid\":\"y2\",\"conv\":\"c-private\",\"after\":0}").get("code").asText());
        }
    }
}
