package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.InProcessGateway;
import im.gateway.RawSocket;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ReceivedEvent;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The delivery path end to end: PostgreSQL → Debezium → Kafka → delivery node → gateway → device. */
@ExtendWith(ImStackExtension.class)
class DeliveryIT {
    private static final Duration CONVERGE = Duration.ofSeconds(60);

    private static ImClient client(Gateway g, String token, Path dir) throws Exception {
        return Pipeline.client(g, token, dir);
    }

    private static long cursorRow(Fixture fx, String device, String conv) {
        return fx.count("SELECT COALESCE((SELECT delivered_seq FROM device_cursors WHERE device_id = ? AND conv_id = ?), -1)", device, conv);
    }

    private static List<Long> seqs(ImClient c, String conv) {
        List<Long> s = new ArrayList<>();
        for (ReceivedEvent e : c.events(conv)) s.add(e.seq());
        return s;
    }

    private static List<Long> range(long from, long to) {
        List<Long> r = new ArrayList<>();
        for (long i = from; i <= to; i++) r.add(i);
        return r;
    }

    @Test
    void pushThenAckAdvancesTheCursor(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<ServerFrame> pushes = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw, fx.boToken, dir.resolve("bo"))) {
                bo.addListener(new ClientListener() {
                    @Override
                    public void onPush(ServerFrame f) {
                        pushes.add(f);
                    }
                });
                Await.until(CONVERGE, () -> bo.cursor("c-ab") == 2, "bo caught up with the join events");
                long seq = ana.send("c-ab", "hello bo").seq();
                Await.until(CONVERGE, () -> cursorRow(fx, "d-bo", "c-ab") == seq, "bo's cursor row reached " + seq);
                assertTrue(pushes.stream().anyMatch(f -> f instanceof EventPush && ((EventPush) f).ev().seq() == seq),
                        "the message arrived as a push, not only through sync");
                assertEquals(seq, bo.cursor("c-ab"));
                assertEquals("hello bo", bo.events("c-ab").get(bo.events("c-ab").size() - 1).body());
            }
        }
    }

    @Test
    void devicesConvergeAndAnOfflineDeviceCatchesUp(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        String boTablet = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));   // one join of the three: seq 1
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw1 = p.addGateway("gw-1", "");
            Gateway gw2 = p.addGateway("gw-2", "");
            p.awaitRunning();
            try (ImClient ana = client(gw1, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw1, fx.boToken, dir.resolve("bo"));
                 ImClient tablet = client(gw2, boTablet, dir.resolve("tablet"))) {
                for (int i = 0; i < 40; i++) ana.send("g1", "message " + i);
                long head = fx.head("g1");
                Map<ImClient, Long> joinedAt = Map.of(ana, 1L, bo, 1L, tablet, 1L);
                for (Map.Entry<ImClient, Long> e : joinedAt.entrySet()) {
                    ImClient c = e.getKey();
                    Await.until(CONVERGE, () -> c.cursor("g1") == head, "a device converged to " + head);
                    assertEquals(range(e.getValue(), head), seqs(c, "g1"),
                            "contiguous local store from the user's join, each event once");
                }
                // cy was offline the whole time: sub + sync on connect brings it to the head.
                try (ImClient cy = client(gw2, fx.cyToken, dir.resolve("cy"))) {
                    Await.until(CONVERGE, () -> cy.cursor("g1") == head, "offline device caught up");
                    assertEquals(range(1, head), seqs(cy, "g1"), "cy sees from its join (seq 1) on");
                    Await.until(CONVERGE, () -> cursorRow(fx, "d-cy", "g1") == head, "cy acked the head");
                }
                for (String d : List.of("d-bo", "d-bo-tablet", "d-ana")) {
                    String dev = d;
                    Await.until(CONVERGE, () -> cursorRow(fx, dev, "g1") == head, dev + " cursor row at head");
                }
            }
        }
    }

    @Test
    void aDeviceOfflineWhenItsUserLeftCatchesUpToTheLeaveAndNoFurther(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        String boTablet = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));  // one join of the three: seq 1
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> cyPushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                cy.addListener(pushRecorder("g1", cyPushed));
                for (int i = 0; i < 3; i++) ana.send("g1", "while the tablet is off " + i);   // 2..4
                long leave = fx.dir.removeMember("g1", "u-bo").seq();                         // 5
                ana.send("g1", "bo is gone");                                                 // 6
                List<Long> pushed = new CopyOnWriteArrayList<>();
                try (ImClient tablet = client(gw, boTablet, dir.resolve("tablet"))) {
                    tablet.addListener(pushRecorder("g1", pushed));
                    Await.until(CONVERGE, () -> cursorRow(fx, "d-bo-tablet", "g1") >= leave,
                            "the tablet acknowledged up to bo's leave");
                    assertEquals(range(1, leave), seqs(tablet, "g1"), "everything bo could see, nothing after");
                    long later = ana.send("g1", "still gone").seq();                          // 7
                    // cy, on the same gateway, got 7 pushed: the gateway has routed it to every subscriber.
                    Await.until(CONVERGE, () -> cyPushed.contains(later), "7 pushed to cy on the same gateway");
                    assertTrue(pushed.stream().noneMatch(s -> s > leave), "nothing after the leave pushed: " + pushed);
                    assertEquals(range(1, leave), seqs(tablet, "g1"));
                }
                // Acknowledged: sub no longer lists g1 for the tablet.
                try (RawSocket raw = new RawSocket(Pipeline.ws(gw))) {
                    raw.auth(boTablet);
                    JsonNode convs = raw.request("{\"t\":\"sub\",\"rid\":\"s\"}").get("convs");
                    for (JsonNode c : convs) assertNotEquals("g1", c.get("conv").asText(), convs.toString());
                }
            }
        }
    }

    @Test
    void visibilityLeaveStopsPushesJoinStartsThem(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo"));   // one join of both: seq 1
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> cyPushed = new CopyOnWriteArrayList<>();
            List<Long> boPushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw, fx.boToken, dir.resolve("bo"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                bo.addListener(pushRecorder("g1", boPushed));
                cy.addListener(pushRecorder("g1", cyPushed));
                long before = ana.send("g1", "before cy joins").seq();                 // 2
                Await.until(CONVERGE, () -> bo.cursor("g1") == before, "bo has 2");
                long join = fx.dir.addMember("g1", "u-cy").seq();                      // 3
                Await.until(CONVERGE, () -> cy.cursor("g1") == join, "cy got its join");
                long during = ana.send("g1", "cy is in").seq();                        // 4
                Await.until(CONVERGE, () -> cy.cursor("g1") == during, "cy got the message after its join");
                long leave = fx.dir.removeMember("g1", "u-bo").seq();                  // 5
                Await.until(CONVERGE, () -> bo.cursor("g1") == leave, "bo got its own leave");
                long after = ana.send("g1", "bo is gone").seq();                       // 6
                Await.until(CONVERGE, () -> cy.cursor("g1") == after, "cy got 6");
                assertTrue(cyPushed.contains(during), "pushed to the new member: " + cyPushed);
                assertTrue(cyPushed.stream().allMatch(s -> s >= join), "nothing before the join was pushed to cy: " + cyPushed);
                assertTrue(boPushed.stream().noneMatch(s -> s > leave), "nothing after the leave was pushed to bo: " + boPushed);
                assertEquals(range(join, after), seqs(cy, "g1"), "cy's store: from its join on");
                assertTrue(seqs(bo, "g1").stream().noneMatch(s -> s > leave), "bo's store ends at its leave");
                assertTrue(seqs(bo, "g1").contains(before));
            }
        }
    }

    /**
     * Issue 10, item 1: a member removed and re-added twenty times, then removed for good, must get
     * nothing written after the final leave, whatever order the join notices and interest records
     * arrive in. Failed on the old code (the delivery node routed on any online interest record and
     * the gateway checked only the lower bound of a period): cy's device got the later messages.
     */
    @Test
    void aMemberChurnedOutGetsNothingAfterItsFinalLeave(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> cyPushed = new CopyOnWriteArrayList<>();
            List<Long> boPushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw, fx.boToken, dir.resolve("bo"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                cy.addListener(pushRecorder("g1", cyPushed));
                bo.addListener(pushRecorder("g1", boPushed));
                Await.until(CONVERGE, () -> cy.cursor("g1") == 1, "cy holds the join of the three");
                for (int i = 0; i < 20; i++) {
                    fx.dir.removeMember("g1", "u-cy");
                    fx.dir.addMember("g1", "u-cy");
                }
                long leave = fx.dir.removeMember("g1", "u-cy").seq();
                List<Long> after = new ArrayList<>();
                for (int i = 0; i < 10; i++) after.add(ana.send("g1", "secret " + i).seq());
                long last = after.get(after.size() - 1);
                Await.until(CONVERGE, () -> boPushed.contains(last) && bo.cursor("g1") == last, "bo got everything");
                Await.until(CONVERGE, () -> cy.cursor("g1") >= leave, "cy caught up to its leave");
                assertTrue(cyPushed.stream().noneMatch(after::contains), "nothing after cy's final leave was pushed: " + cyPushed);
                assertTrue(seqs(cy, "g1").stream().noneMatch(s -> s > leave), "cy's store ends at its leave: " + seqs(cy, "g1"));
            }
        }
    }

    /**
     * Leave then rejoin back to back: the rejoined member must keep getting pushes (the rejoin's
     * interest can be applied before the leave when they travel on different topics).
     */
    @Test
    void aMemberWhoLeavesAndRejoinsBackToBackKeepsGettingPushes(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> cyPushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                cy.addListener(pushRecorder("g1", cyPushed));
                Await.until(CONVERGE, () -> cy.cursor("g1") == 1, "cy holds the join of the three");
                for (int i = 0; i < 5; i++) {
                    fx.dir.removeMember("g1", "u-cy");
                    fx.dir.addMember("g1", "u-cy");
                }
                for (int i = 0; i < 5; i++) {
                    long seq = ana.send("g1", "to the rejoined cy " + i).seq();
                    Await.until(CONVERGE, () -> cyPushed.contains(seq), seq + " pushed to the rejoined member");
                }
            }
        }
    }

    @Test
    void whenADeliveryNodeDiesAnotherTakesOverAndPushesResume(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            p.addNode();
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> pushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw, fx.boToken, dir.resolve("bo"))) {
                bo.addListener(pushRecorder("c-ab", pushed));
                long first = ana.send("c-ab", "both nodes up").seq();
                Await.until(CONVERGE, () -> pushed.contains(first), "pushed while both nodes run");
                p.nodes.get(0).close();                      // one node dies; its partitions move
                long second = ana.send("c-ab", "one node left").seq();
                Await.until(CONVERGE, () -> pushed.contains(second), "pushes resume through the surviving node");
                // onPush fires on receipt; the SDK stores on its store lane after it, then moves the cursor
                Await.until(CONVERGE, () -> bo.cursor("c-ab") == second, "bo stored it");
            }
        }
    }

    @Test
    void whenADeliveryNodeProcessIsKilledTheOtherTakesOverItsPartitions(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> convs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            convs.add("k" + i);
            fx.dir.createConversation("k" + i, "direct", List.of("u-ana", "u-bo"));
        }
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            Process node = ChildRole.start(p.settings, im.delivery.route.DeliveryMain.class, "IM_RUNNING delivery");
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw, fx.boToken, dir.resolve("bo"))) {
                Map<String, List<Long>> pushed = new java.util.concurrent.ConcurrentHashMap<>();
                for (String c : convs) {
                    pushed.put(c, new CopyOnWriteArrayList<>());
                    bo.addListener(pushRecorder(c, pushed.get(c)));
                }
                node.destroyForcibly();                      // kill -9: no leave-group, no commit
                assertTrue(node.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
                for (String c : convs) {
                    long seq = ana.send(c, "after the kill").seq();
                    Await.until(CONVERGE, () -> pushed.get(c).contains(seq), "push resumed in " + c);
                }
            } finally {
                node.destroyForcibly();
            }
        }
    }

    /**
     * A bulk add of 51 users is one join event: the online devices of the added members (connected
     * before the add, so with no interest in the conversation yet) get the next message pushed and
     * hold the log from that join on; a member added in bulk who then leaves gets nothing after its
     * leave; the existing member gets the join as one compact event.
     */
    @Test
    void aBulkAddIsOneEventAndEveryAddedMembersOnlineDeviceGetsTheNextPushAndAnyLeaverNothingAfter(TestStack stack,
                                                                                                 @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> added = new ArrayList<>(List.of("u-bo"));
        added.addAll(createUsers(fx, "u-b", 0, 50));
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 3; i++) tokens.add(fx.dir.registerDevice("u-b" + i, "d-b" + i).token());
        fx.dir.createConversation("g1", "group", List.of("u-ana"));                         // seq 1: a single join
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<List<Long>> pushed = List.of(new CopyOnWriteArrayList<>(), new CopyOnWriteArrayList<>(), new CopyOnWriteArrayList<>());
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient b0 = client(gw, tokens.get(0), dir.resolve("b0"));
                 ImClient b1 = client(gw, tokens.get(1), dir.resolve("b1"));
                 ImClient b2 = client(gw, tokens.get(2), dir.resolve("b2"))) {
                List<ImClient> bs = List.of(b0, b1, b2);
                for (int i = 0; i < 3; i++) bs.get(i).addListener(pushRecorder("g1", pushed.get(i)));
                Await.until(CONVERGE, () -> ana.cursor("g1") == 1, "ana holds its join");

                im.store.directory.Onboarding.AddedMembers r = fx.dir.onboarding().addMembers("g1", added);
                assertEquals(2, r.head(), "one event for the 51");
                assertTrue(r.added().values().stream().allMatch(s -> s == 2), "every period starts at that event: " + r.added());
                assertEquals(2, fx.count("SELECT count(*) FROM events WHERE conv_id = ?", "g1"));

                // The one notice of the bulk join registers each added member's connections on its
                // gateway and pushes the join to them; wait for it, as for a single join, then send.
                for (ImClient b : bs) Await.until(CONVERGE, () -> b.cursor("g1") == 2, "an added member's device got its join");
                long welcome = ana.send("g1", "welcome, all 51").seq();                      // 3
                for (int i = 0; i < 3; i++) {
                    ImClient b = bs.get(i);
                    List<Long> got = pushed.get(i);
                    Await.until(CONVERGE, () -> got.contains(welcome) && b.cursor("g1") == welcome,
                            "an added member's online device got the next message pushed");
                    assertEquals(List.of(2L, welcome), seqs(b, "g1"), "its store: from the bulk join on");
                }
                ReceivedEvent join = ana.events("g1").stream().filter(e -> e.seq() == 2).findFirst().orElseThrow();
                assertEquals("join", join.kind());
                assertEquals("u-bo", join.sender(), "the first user of the bulk");

                long leave = fx.dir.removeMember("g1", "u-b1").seq();                        // 4
                long after = ana.send("g1", "b1 is gone").seq();                             // 5
                Await.until(CONVERGE, () -> pushed.get(0).contains(after) && pushed.get(2).contains(after), "the others got 5");
                Await.until(CONVERGE, () -> b1.cursor("g1") >= leave, "b1 caught up to its leave");
                assertTrue(pushed.get(1).stream().noneMatch(s -> s > leave), "nothing after b1's leave was pushed: " + pushed.get(1));
                assertEquals(List.of(2L, welcome, leave), seqs(b1, "g1"), "b1's store ends at its leave");
            }
        }
    }

    /**
     * Goal 5: reading messages never requires downloading the roster. A group created with 10,000
     * members is two join events (5,000 each, the per-event cap); a device's first sync gets the
     * join that added its user, then the messages, in one small page: not 10,000 events, not the list.
     */
    @Test
    void aFirstSyncAfterATenThousandMemberCreateGetsTheMessagesAfterOneJoinEvent(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> members = new ArrayList<>(List.of("u-ana"));
        members.addAll(createUsers(fx, "u-m", 1, 10_000));
        String last = fx.dir.registerDevice("u-m9999", "d-m9999").token();
        assertEquals(2, fx.dir.createConversation("g-big", "group", members).head(), "10,000 members: two join events");
        try (InProcessGateway gw = new InProcessGateway(stack);
             RawSocket ana = new RawSocket(gw.ws());
             RawSocket m = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            for (int i = 0; i < 5; i++) {
                JsonNode sent = ana.request("{\"t\":\"send\",\"rid\":\"s" + i + "\",\"conv\":\"g-big\",\"cmid\":\"c" + i
                        + "\",\"body\":\"hello " + i + "\"}");
                assertEquals(3 + i, sent.get("seq").asLong(), sent.toString());
            }
            m.auth(last);
            JsonNode page = m.request("{\"t\":\"sync\",\"rid\":\"y\",\"conv\":\"g-big\",\"after\":0,\"limit\":100}");
            JsonNode events = page.get("events");
            assertFalse(page.get("more").asBoolean(), page.toString());
            assertEquals(6, events.size(), "one join event, then the 5 messages: " + page);
            assertEquals(2, events.get(0).get("seq").asLong(), "the join that added u-m9999");
            assertEquals("join", events.get(0).get("kind").asText());
            assertEquals(5_000, events.get(0).get("count").asInt());
            assertFalse(events.get(0).has("users"), "never the roster");
            for (int i = 1; i < 6; i++) assertEquals("msg", events.get(i).get("kind").asText());
            assertTrue(page.toString().length() < 4_000, "a small page: " + page.toString().length() + " chars");
        }
    }

    /** Creates users {@code prefix + from} .. {@code prefix + (to - 1)} in one bulk call; returns their ids. */
    private static List<String> createUsers(Fixture fx, String prefix, int from, int to) {
        List<String> ids = new ArrayList<>();
        List<im.store.directory.Onboarding.NewUser> users = new ArrayList<>();
        for (int i = from; i < to; i++) {
            ids.add(prefix + i);
            users.add(new im.store.directory.Onboarding.NewUser(prefix + i, null));
        }
        fx.dir.onboarding().createUsers(users);
        return ids;
    }

    static ClientListener pushRecorder(String conv, List<Long> into) {
        return new ClientListener() {
            @Override
            public void onPush(ServerFrame f) {
                if (f instanceof EventPush && ((EventPush) f).ev().conv().equals(conv)) into.add(((EventPush) f).ev().seq());
            }
        };
    }

    /**
     * The Java SDK in more conversations than one {@code subbed} page holds: it pages {@code sub}
     * (pushes on for the conversations of every page) and catches up what it missed while offline
     * across all of them with {@code catchup}, then acks every head.
     */
    @Test
    void aClientInSixHundredConversationsCatchesUpEveryOneAndGetsPushesFromTheSecondPage(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> convs = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            String conv = "c-m%04d".formatted(i);
            fx.dir.createConversation(conv, "direct", List.of("u-ana", "u-bo"));   // joins 1, 2
            convs.add(conv);
        }
        DevicePrincipal ana = fx.dir.authenticate(fx.anaToken);
        try (Pipeline p = new Pipeline(stack, Map.of());
             SendService sends = new SendService(fx.db, Faults.none(), Clock.systemUTC())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            for (String conv : convs) sends.send(ana, conv, "k-" + conv, "while bo was offline");   // 3
            try (ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                bo.connect();
                Await.until(CONVERGE, () -> convs.stream().allMatch(c -> bo.cursor(c) == 3) && bo.cursor("c-ab") == 2,
                        "bo holds every conversation up to its head");
                Await.until(CONVERGE, () -> fx.count("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo'"
                        + " AND conv_id LIKE 'c-m%' AND delivered_seq = 3") == convs.size(), "bo acked every head");
                String last = convs.get(convs.size() - 1);   // listed on the second page of 500
                sends.send(ana, last, "k-pushed", "pushed");
                Await.until(CONVERGE, () -> bo.cursor(last) == 4, "a push of a conversation of the second sub page");
                assertEquals(List.of(2L, 3L, 4L), bo.events(last).stream().map(e -> e.seq()).toList(), "from bo's join on, each once");
            }
        }
    }
}
