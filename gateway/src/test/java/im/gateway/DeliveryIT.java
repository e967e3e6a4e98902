package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.client.ClientListener;
import im.client.ClientOptions;
import im.client.ImClient;
import im.client.ReceivedEvent;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.ingest.SendService;
import im.protocol.EventPush;
import im.protocol.ServerFrame;
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
        ImClient c = ImClient.open(ClientOptions.of(Pipeline.ws(g), token, dir));
        c.connect();
        return c;
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
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));   // joins 1..3
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw1 = p.addGateway("gw-1", "");
            Gateway gw2 = p.addGateway("gw-2", "");
            p.awaitRunning();
            try (ImClient ana = client(gw1, fx.anaToken, dir.resolve("ana"));
                 ImClient bo = client(gw1, fx.boToken, dir.resolve("bo"));
                 ImClient tablet = client(gw2, boTablet, dir.resolve("tablet"))) {
                for (int i = 0; i < 40; i++) ana.send("g1", "message " + i);
                long head = fx.head("g1");
                Map<ImClient, Long> joinedAt = Map.of(ana, 1L, bo, 2L, tablet, 2L);
                for (Map.Entry<ImClient, Long> e : joinedAt.entrySet()) {
                    ImClient c = e.getKey();
                    Await.until(CONVERGE, () -> c.cursor("g1") == head, "a device converged to " + head);
                    assertEquals(range(e.getValue(), head), seqs(c, "g1"),
                            "contiguous local store from the user's join, each event once");
                }
                // cy was offline the whole time: sub + sync on connect brings it to the head.
                try (ImClient cy = client(gw2, fx.cyToken, dir.resolve("cy"))) {
                    Await.until(CONVERGE, () -> cy.cursor("g1") == head, "offline device caught up");
                    assertEquals(range(3, head), seqs(cy, "g1"), "cy sees from its join (seq 3) on");
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
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));  // joins 1..3
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<Long> cyPushed = new CopyOnWriteArrayList<>();
            try (ImClient ana = client(gw, fx.anaToken, dir.resolve("ana"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                cy.addListener(pushRecorder("g1", cyPushed));
                for (int i = 0; i < 3; i++) ana.send("g1", "while the tablet is off " + i);   // 4..6
                long leave = fx.dir.removeMember("g1", "u-bo").seq();                         // 7
                ana.send("g1", "bo is gone");                                                 // 8
                List<Long> pushed = new CopyOnWriteArrayList<>();
                try (ImClient tablet = client(gw, boTablet, dir.resolve("tablet"))) {
                    tablet.addListener(pushRecorder("g1", pushed));
                    Await.until(CONVERGE, () -> cursorRow(fx, "d-bo-tablet", "g1") >= leave,
                            "the tablet acknowledged up to bo's leave");
                    assertEquals(range(2, leave), seqs(tablet, "g1"), "everything bo could see, nothing after");
                    long later = ana.send("g1", "still gone").seq();                          // 9
                    // cy, on the same gateway, got 9 pushed: the gateway has routed it to every subscriber.
                    Await.until(CONVERGE, () -> cyPushed.contains(later), "9 pushed to cy on the same gateway");
                    assertTrue(pushed.stream().noneMatch(s -> s > leave), "nothing after the leave pushed: " + pushed);
                    assertEquals(range(2, leave), seqs(tablet, "g1"));
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
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo"));
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
                long before = ana.send("g1", "before cy joins").seq();                 // 3
                Await.until(CONVERGE, () -> bo.cursor("g1") == before, "bo has 3");
                long join = fx.dir.addMember("g1", "u-cy").seq();                      // 4
                Await.until(CONVERGE, () -> cy.cursor("g1") == join, "cy got its join");
                long during = ana.send("g1", "cy is in").seq();                        // 5
                Await.until(CONVERGE, () -> cy.cursor("g1") == during, "cy got the message after its join");
                long leave = fx.dir.removeMember("g1", "u-bo").seq();                  // 6
                Await.until(CONVERGE, () -> bo.cursor("g1") == leave, "bo got its own leave");
                long after = ana.send("g1", "bo is gone").seq();                       // 7
                Await.until(CONVERGE, () -> cy.cursor("g1") == after, "cy got 7");
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
                Await.until(CONVERGE, () -> cy.cursor("g1") == 3, "cy holds the three joins");
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
                Await.until(CONVERGE, () -> cy.cursor("g1") == 3, "cy holds the three joins");
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
                assertEquals(second, bo.cursor("c-ab"));
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
