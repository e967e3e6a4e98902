package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.CatchUpPosition;
import im.protocol.CaughtUpRange;
import im.protocol.Event;
import im.store.cursor.CursorService;
import im.store.read.CatchUpPage;
import im.store.read.ConversationReader;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code catchup}: one paged request returns what a device has not acknowledged across all its
 * conversations, within its visibility, resuming after the position it was given (not after the
 * cursors, which acks move late), bounded by the limit and by bytes.
 */
@ExtendWith(ImStackExtension.class)
class CatchUpIT {
    private Fixture fx;
    private ConversationReader reader;
    private CursorService cursors;
    private SendService sends;
    private DevicePrincipal ana;
    private DevicePrincipal bo;
    private DevicePrincipal cy;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        reader = new ConversationReader(fx.db);
        cursors = new CursorService(fx.db);
        sends = new SendService(fx.db, Faults.none(), Clock.systemUTC());
        ana = fx.dir.authenticate(fx.anaToken);
        bo = fx.dir.authenticate(fx.boToken);
        cy = fx.dir.authenticate(fx.cyToken);
    }

    @AfterEach
    void tearDown() {
        sends.close();
    }

    private void send(DevicePrincipal who, String conv, String cmid) {
        sends.send(who, conv, cmid, "body of " + cmid);
    }

    /** Every page from the start, each resuming after the previous one's position. */
    private List<CatchUpPage> all(DevicePrincipal who, int limit, long maxBytes) {
        List<CatchUpPage> pages = new ArrayList<>();
        CatchUpPosition after = null;
        do {
            CatchUpPage p = reader.catchUp(who, after, limit, maxBytes);
            pages.add(p);
            assertTrue(pages.size() < 10_000, "paging ends");
            after = p.after();
            assertEquals(p.more(), after != null, "a position exactly when more follows");
            if (p.more()) {
                Event last = p.events().get(p.events().size() - 1);
                assertEquals(new CatchUpPosition(last.conv(), last.seq()), after, "the position is the last event's");
            }
        } while (pages.get(pages.size() - 1).more());
        return pages;
    }

    private static List<String> keys(List<Event> events) {
        return events.stream().map(e -> e.conv() + "#" + e.seq()).toList();
    }

    private static List<Event> events(List<CatchUpPage> pages) {
        return pages.stream().flatMap(p -> p.events().stream()).toList();
    }

    @Test
    void returnsExactlyTheEventsAboveEachCursorAcrossConversations() {
        fx.dir.createConversation("c-g1", "group", List.of("u-ana", "u-bo", "u-cy"));   // one (bulk) join: 1
        fx.dir.createConversation("c-g2", "group", List.of("u-ana", "u-cy"));           // one (bulk) join: 1
        for (int i = 0; i < 3; i++) send(bo, "c-ab", "ab" + i);   // c-ab 3..5
        for (int i = 0; i < 2; i++) send(bo, "c-g1", "g" + i);    // c-g1 2..3
        cursors.ack(ana, "c-ab", 4);
        cursors.ack(ana, "c-g2", 1);                               // c-g2: nothing missing

        CatchUpPage page = reader.catchUp(ana, null, 100, Long.MAX_VALUE);
        assertEquals(List.of("c-ab#5", "c-g1#1", "c-g1#2", "c-g1#3"), keys(page.events()));
        assertEquals(List.of(new CaughtUpRange("c-ab", 4, 5), new CaughtUpRange("c-g1", 0, 3)), page.convs(), "from each cursor to each head");
        assertFalse(page.more());
        assertNull(page.after());

        cursors.ack(ana, "c-ab", 5);
        cursors.ack(ana, "c-g1", 3);
        CatchUpPage none = reader.catchUp(ana, null, 100, Long.MAX_VALUE);
        assertEquals(List.of(), none.events(), "nothing is missing once every head is acknowledged");
        assertEquals(List.of(), none.convs());
        assertFalse(none.more());
    }

    @Test
    void aFormerMemberCatchesUpToItsLeaveAndANeverMemberGetsNothing() {
        fx.dir.createConversation("c-g", "group", List.of("u-ana", "u-bo"));   // one (bulk) join: 1
        send(bo, "c-g", "before");                                              // 2
        long leave = fx.dir.removeMember("c-g", "u-ana").seq();                  // 3
        send(bo, "c-g", "after");                                               // 4
        assertEquals(3, leave);

        List<Event> got = events(all(ana, 100, Long.MAX_VALUE));
        assertEquals(List.of("c-ab#1", "c-ab#2", "c-g#1", "c-g#2", "c-g#3"), keys(got),
                "the former member sees up to its leave, nothing after");
        assertEquals(Event.LEAVE, got.get(got.size() - 1).kind());
        assertEquals(List.of(new CaughtUpRange("c-ab", 0, 2), new CaughtUpRange("c-g", 0, 3)), reader.catchUp(ana, null, 100, Long.MAX_VALUE).convs(),
                "a former member's head is its leave");
        cursors.ack(ana, "c-g", 3);
        assertEquals(List.of("c-ab#1", "c-ab#2"), keys(reader.catchUp(ana, null, 100, Long.MAX_VALUE).events()),
                "once the leave is acknowledged the conversation is caught up");

        assertEquals(List.of(), reader.catchUp(cy, null, 100, Long.MAX_VALUE).events(), "cy was never in c-ab or c-g");

        // rejoining: the events between the leave and the new join stay invisible
        long rejoin = fx.dir.addMember("c-g", "u-ana").seq();                   // 5
        send(bo, "c-g", "back");                                                // 6
        assertEquals(List.of("c-g#5", "c-g#6"), keys(events(all(ana, 100, Long.MAX_VALUE))).subList(2, 4));
        assertEquals(5, rejoin);
    }

    @Test
    void pagesResumeAfterTheirPositionWhileCursorsStayBehind() {
        fx.dir.createConversation("c-g1", "group", List.of("u-ana", "u-bo"));
        fx.dir.createConversation("c-g2", "group", List.of("u-ana", "u-bo"));
        for (int i = 0; i < 5; i++) {
            send(bo, "c-g1", "a" + i);
            send(bo, "c-g2", "b" + i);
        }
        List<Event> whole = reader.catchUp(ana, null, 1000, Long.MAX_VALUE).events();
        assertEquals(2 + 6 + 6, whole.size());
        for (int limit : new int[] {1, 2, 3, 7, 16}) {
            List<CatchUpPage> pages = all(ana, limit, Long.MAX_VALUE);   // no ack between pages: cursors stay put
            assertEquals(keys(whole), keys(events(pages)), "limit " + limit + ": every event once, in order");
            assertEquals((whole.size() + limit - 1) / limit, pages.size(), "limit " + limit + ": full pages");
            pages.forEach(p -> assertTrue(p.events().size() <= limit));
            Map<String, Long> reached = new TreeMap<>();   // each conversation's ranges follow on from its cursor to its head
            for (CatchUpPage p : pages) {
                for (CaughtUpRange r : p.convs()) {
                    assertEquals(reached.getOrDefault(r.conv(), 0L), r.after(), "limit " + limit + ": " + r);
                    assertTrue(r.after() < r.upTo(), r.toString());
                    reached.put(r.conv(), r.upTo());
                }
            }
            assertEquals(Map.of("c-ab", 2L, "c-g1", 6L, "c-g2", 6L), reached);
        }
        // a page acked meanwhile is not read again; what is above the acks still is
        CatchUpPage first = reader.catchUp(ana, null, 4, Long.MAX_VALUE);
        cursors.ack(ana, "c-ab", 2);
        cursors.ack(ana, "c-g1", 1);
        CatchUpPage next = reader.catchUp(ana, first.after(), 4, Long.MAX_VALUE);
        assertEquals(List.of("c-g1#3", "c-g1#4", "c-g1#5", "c-g1#6"), keys(next.events()));
    }

    @Test
    void pagesAreCutByBytesButAlwaysHoldAnEvent() {
        for (int i = 0; i < 4; i++) sends.send(bo, "c-ab", "big" + i, "x".repeat(10_000));   // 3..6
        List<CatchUpPage> pages = all(ana, 1000, 15_000);
        assertEquals(List.of("c-ab#1", "c-ab#2", "c-ab#3", "c-ab#4", "c-ab#5", "c-ab#6"), keys(events(pages)));
        assertEquals(List.of(3, 1, 1, 1), pages.stream().map(p -> p.events().size()).toList(),
                "the joins and one body fit in 15,000 bytes; then one body a page");
        List<CatchUpPage> tiny = all(ana, 1000, 1);
        assertEquals(6, tiny.size(), "a page holds at least one event, whatever its size");
    }

    @Test
    void aDeviceInTwoThousandConversationsCatchesUpInAboutNOverLimitRequests() {
        Set<String> convs = new HashSet<>();
        for (int i = 0; i < 2000; i++) {
            String conv = "c-m%04d".formatted(i);
            fx.dir.createConversation(conv, "direct", List.of("u-ana", "u-bo"));   // two joins each
            convs.add(conv);
        }
        convs.add("c-ab");
        int limit = 1000;
        List<CatchUpPage> pages = all(ana, limit, Long.MAX_VALUE);
        List<Event> got = events(pages);
        assertEquals(2 * convs.size(), got.size());
        assertEquals(got.size(), new HashSet<>(keys(got)).size(), "no event twice");
        assertEquals((got.size() + limit - 1) / limit, pages.size());
        Set<String> completed = new HashSet<>();
        pages.forEach(p -> p.convs().stream().filter(r -> r.upTo() == 2).forEach(r -> completed.add(r.conv())));
        assertEquals(convs, completed);
    }

    @Test
    void theCatchupFrameOverASocketIsPagedByTheConnectionsBytesAndChecksItsInput(TestStack stack) throws Exception {
        for (int i = 0; i < 30; i++) sends.send(bo, "c-ab", "big" + i, "y".repeat(8_000));
        try (InProcessGateway gw = new InProcessGateway(stack); RawSocket s = new RawSocket(gw.ws())) {
            s.auth(fx.anaToken);
            List<Long> seqs = new ArrayList<>();
            String after = null;
            int requests = 0;
            do {
                JsonNode r = s.request("{\"t\":\"catchup\",\"rid\":\"q" + requests + "\""
                        + (after == null ? "" : ",\"after\":\"" + after + "\"") + "}");
                requests++;
                assertEquals("caughtup", r.path("t").asText(), r.toString());
                assertTrue(r.path("events").size() <= 9, "a quarter of the default 256 KiB budget holds 7 bodies of 8,000 bytes and the joins: "
                        + r.path("events").size());
                r.path("events").forEach(e -> seqs.add(e.path("seq").asLong()));
                after = r.path("more").asBoolean() ? r.path("after").asText() : null;
            } while (after != null);
            assertEquals(32, seqs.size());
            for (int i = 0; i < 32; i++) assertEquals(i + 1, seqs.get(i));
            assertTrue(requests >= 4, "cut by bytes: " + requests);

            assertEquals("BAD_FIELD", s.request("{\"t\":\"catchup\",\"rid\":\"e1\",\"limit\":1001}").path("code").asText());
            assertEquals("BAD_FIELD", s.request("{\"t\":\"catchup\",\"rid\":\"e2\",\"after\":\"c-ab\"}").path("code").asText());
            assertEquals("BAD_FIELD", s.request("{\"t\":\"catchup\",\"rid\":\"e3\",\"after\":\"c-ab/-1\"}").path("code").asText());
        }
    }
}
