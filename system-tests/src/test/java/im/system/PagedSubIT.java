package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.InProcessGateway;
import im.gateway.RawSocket;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.store.read.ConvPage;
import im.store.read.ConversationReader;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code sub} in pages: every conversation once across the pages of a pass, {@code more} exact at
 * the boundaries, a {@code sub} without {@code after}/{@code limit} paged at the default, bad input
 * refused, and each page turning pushes on for its conversations, joins during the pass included.
 */
@ExtendWith(ImStackExtension.class)
class PagedSubIT {
    private static List<String> groups(Fixture fx, int n) {
        List<String> convs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String conv = "c-p%04d".formatted(i);
            fx.dir.createConversation(conv, "group", List.of("u-ana", "u-bo"));
            convs.add(conv);
        }
        return convs;
    }

    /** Sends a request and returns its reply; the pushes that arrive before it are added to {@code pushes}. */
    private static JsonNode request(RawSocket s, String frame, List<JsonNode> pushes) throws Exception {
        String rid = new com.fasterxml.jackson.databind.ObjectMapper().readTree(frame).path("rid").asText();
        s.send(frame);
        while (true) {
            JsonNode f = s.next();
            if (rid.equals(f.path("rid").asText())) return f;
            pushes.add(f);
        }
    }

    private static String sub(String rid, String after, int limit) {
        return "{\"t\":\"sub\",\"rid\":\"" + rid + "\"" + (after == null ? "" : ",\"after\":\"" + after + "\"")
                + (limit == 0 ? "" : ",\"limit\":" + limit) + "}";
    }

    @Test
    void moreIsExactAtPageBoundariesAndPagesCoverEachConversationOnce(TestStack stack) {
        Fixture fx = new Fixture(stack);
        Set<String> all = new TreeSet<>(groups(fx, 24));
        all.add("c-ab");
        ConversationReader reader = new ConversationReader(fx.db);
        DevicePrincipal ana = fx.dir.authenticate(fx.anaToken);
        assertFalse(reader.conversations(ana, "", 25).more(), "exactly a page: no more");
        ConvPage short1 = reader.conversations(ana, "", 24);
        assertTrue(short1.more());
        ConvPage rest = reader.conversations(ana, short1.convs().get(23).conv(), 24);
        assertEquals(1, rest.convs().size());
        assertFalse(rest.more());
        for (int limit : new int[] {1, 5, 7, 25}) {
            List<String> seen = new ArrayList<>();
            String after = "";
            int pages = 0;
            ConvPage p;
            do {
                p = reader.conversations(ana, after, limit);
                pages++;
                p.convs().forEach(c -> seen.add(c.conv()));
                if (!p.convs().isEmpty()) after = p.convs().get(p.convs().size() - 1).conv();
            } while (p.more());
            assertEquals(all.size(), seen.size(), "limit " + limit + ": each once " + seen);
            assertEquals(all, new TreeSet<>(seen));
            assertEquals((all.size() + limit - 1) / limit, pages, "limit " + limit);
        }
        assertEquals(List.of(), reader.conversations(ana, "c-zzz", 10).convs(), "nothing after the last");
        assertEquals(List.of(), reader.conversations(fx.dir.authenticate(fx.cyToken), "", 10).convs(), "cy is in nothing");
    }

    @Test
    void aSubWithoutAfterOrLimitIsTheFirstPageOfFiveHundredAndBadPagingIsRefused(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        groups(fx, 500);   // and c-ab: 501
        try (InProcessGateway gw = new InProcessGateway(stack); RawSocket ana = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            List<JsonNode> pushes = new ArrayList<>();
            JsonNode first = request(ana, sub("s1", null, 0), pushes);
            assertEquals(500, first.path("convs").size());
            assertTrue(first.path("more").asBoolean(), "a 501st conversation follows");
            String last = first.path("convs").get(499).path("conv").asText();
            JsonNode second = request(ana, sub("s2", last, 0), pushes);
            assertEquals(1, second.path("convs").size());
            assertFalse(second.path("more").asBoolean());
            Set<String> seen = new HashSet<>();
            first.path("convs").forEach(c -> seen.add(c.path("conv").asText()));
            second.path("convs").forEach(c -> seen.add(c.path("conv").asText()));
            assertEquals(501, seen.size());

            for (String bad : List.of(sub("e1", null, 1001), "{\"t\":\"sub\",\"rid\":\"e2\",\"limit\":0}",
                    "{\"t\":\"sub\",\"rid\":\"e3\",\"after\":\"c/ab\"}", "{\"t\":\"sub\",\"rid\":\"e4\",\"after\":\"\"}",
                    "{\"t\":\"sub\",\"rid\":\"e5\",\"after\":7}", "{\"t\":\"sub\",\"rid\":\"e6\",\"limit\":\"10\"}")) {
                assertEquals("BAD_FIELD", request(ana, bad, pushes).path("code").asText(), bad);
            }
        }
    }

    @Test
    void everyPageTurnsPushesOnForItsConversationsAndJoinsDuringThePassAreNotMissed(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> convs = groups(fx, 24);
        convs.add("c-ab");
        try (Pipeline p = new Pipeline(stack, java.util.Map.of());
             SendService sends = new SendService(fx.db, Faults.none(), Clock.systemUTC())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (RawSocket ana = new RawSocket(Pipeline.ws(gw))) {
                ana.auth(fx.anaToken);
                List<JsonNode> pushes = new ArrayList<>();
                List<String> listed = new ArrayList<>();
                String after = null;
                int page = 0;
                JsonNode r;
                do {
                    r = request(ana, sub("s" + page, after, 10), pushes);
                    assertEquals("subbed", r.path("t").asText(), r.toString());
                    r.path("convs").forEach(c -> listed.add(c.path("conv").asText()));
                    after = listed.get(listed.size() - 1);
                    if (page == 0) {
                        // joins while the pass is under way: one before the pages still to come, one among them
                        fx.dir.createConversation("c-00new", "group", List.of("u-ana", "u-bo"));
                        fx.dir.createConversation("c-zznew", "group", List.of("u-ana", "u-bo"));
                    }
                    page++;
                } while (r.path("more").asBoolean());
                assertEquals(listed.size(), new HashSet<>(listed).size(), "no conversation twice: " + listed);
                Set<String> expected = new TreeSet<>(convs);
                expected.add("c-zznew");
                assertEquals(expected, new TreeSet<>(listed), "every conversation, and the one joined after the pass passed its place is not listed");

                DevicePrincipal bo = fx.dir.authenticate(fx.boToken);
                List<String> everywhere = new ArrayList<>(convs);
                everywhere.add("c-00new");
                everywhere.add("c-zznew");
                for (String conv : everywhere) sends.send(bo, conv, "m-" + conv, "to every conversation");
                Set<String> pushed = new TreeSet<>();
                long deadline = System.nanoTime() + 30_000_000_000L;
                for (JsonNode f : pushes) collect(f, pushed);
                while (pushed.size() < everywhere.size() && System.nanoTime() < deadline) collect(ana.next(), pushed);
                assertEquals(new TreeSet<>(everywhere), pushed, "a push of every conversation, listed in any page or joined during the pass");
            }
        }
    }

    private static void collect(JsonNode f, Set<String> pushedMessages) {
        if (f.path("t").asText().equals("event") && f.path("ev").path("kind").asText().equals("msg")) {
            pushedMessages.add(f.path("ev").path("conv").asText());
        }
    }
}
