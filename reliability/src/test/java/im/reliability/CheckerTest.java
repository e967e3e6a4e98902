package im.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.reliability.History.CommittedEvent;
import im.reliability.History.DeviceRecord;
import im.reliability.History.Outcome;
import im.reliability.History.Period;
import im.reliability.History.SendRecord;
import im.reliability.History.TopicRecord;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The checker must itself be tested (issue 5): a hand-built valid history passes, and each
 * minimal mutation of it that breaks one promise is reported as exactly that kind.
 *
 * <p>The valid history:
 * <pre>
 * c-g (group), head 8                 c-1 (1:1 ana/bob), head 4
 *   1 join ana                           1 join ana
 *   2 join bob                           2 join bob
 *   3 msg ana a1 "hi"      SENT (twice)  3 msg bob b3 "dm"  SENT
 *   4 msg bob b1 "yo"      SENT          4 msg ana a3 "re"  SENT
 *   5 join cy   (cy joined late)
 *   6 msg ana a2 "welcome" PENDING, committed
 *   7 leave bob (bob left; his later send b2 was REJECTED)
 *   8 msg cy y1 "hey"      SENT
 * visibility c-g: ana [1,∞) bob [2,7] cy [5,∞);  c-1: ana [1,∞) bob [2,∞)
 * devices: ana-1 (online, at the heads), ana-2 (offline, lagging in c-g), bob-1 (online),
 *          cy-1 (online); topic carries every event, c-g 3 twice.
 * </pre>
 */
class CheckerTest {
    private static final long OPEN = Long.MAX_VALUE;

    // ---- the valid history ------------------------------------------------------------------

    /** A fresh, fully mutable valid history. */
    static History valid() {
        List<SendRecord> sends = new ArrayList<>(List.of(
                send("ana-1", "ana", "c-g", "a1", "hi", Outcome.SENT, 3),
                send("ana-1", "ana", "c-g", "a1", "hi", Outcome.SENT, 3), // a resend answered dup:true
                send("bob-1", "bob", "c-g", "b1", "yo", Outcome.SENT, 4),
                send("ana-2", "ana", "c-g", "a2", "welcome", Outcome.PENDING, 0),
                send("cy-1", "cy", "c-g", "y1", "hey", Outcome.SENT, 8),
                send("bob-1", "bob", "c-g", "b2", "late", Outcome.REJECTED, 0),
                send("bob-1", "bob", "c-1", "b3", "dm", Outcome.SENT, 3),
                send("ana-1", "ana", "c-1", "a3", "re", Outcome.SENT, 4)));

        Map<String, List<CommittedEvent>> committed = new LinkedHashMap<>();
        committed.put("c-g", new ArrayList<>(List.of(
                join("c-g", 1, "ana"),
                join("c-g", 2, "bob"),
                msg("c-g", 3, "ana", "a1", "hi"),
                msg("c-g", 4, "bob", "b1", "yo"),
                join("c-g", 5, "cy"),
                msg("c-g", 6, "ana", "a2", "welcome"),
                new CommittedEvent("c-g", 7, "leave", "bob", null, null),
                msg("c-g", 8, "cy", "y1", "hey"))));
        committed.put("c-1", new ArrayList<>(List.of(
                join("c-1", 1, "ana"),
                join("c-1", 2, "bob"),
                msg("c-1", 3, "bob", "b3", "dm"),
                msg("c-1", 4, "ana", "a3", "re"))));

        Map<String, Long> heads = new LinkedHashMap<>(Map.of("c-g", 8L, "c-1", 4L));

        List<TopicRecord> topic = new ArrayList<>();
        for (long s = 1; s <= 4; s++) {
            topic.add(new TopicRecord("c-g", s));
            topic.add(new TopicRecord("c-1", s));
        }
        topic.add(new TopicRecord("c-g", 3)); // a relay replay: duplicates on the topic are fine
        for (long s = 5; s <= 8; s++) {
            topic.add(new TopicRecord("c-g", s));
        }

        Map<String, Map<String, List<Period>>> visibility = new LinkedHashMap<>();
        visibility.put("c-g", new LinkedHashMap<>(Map.of(
                "ana", new ArrayList<>(List.of(new Period(1, OPEN))),
                "bob", new ArrayList<>(List.of(new Period(2, 7))),
                "cy", new ArrayList<>(List.of(new Period(5, OPEN))))));
        visibility.put("c-1", new LinkedHashMap<>(Map.of(
                "ana", new ArrayList<>(List.of(new Period(1, OPEN))),
                "bob", new ArrayList<>(List.of(new Period(2, OPEN))))));

        List<DeviceRecord> devices = new ArrayList<>(List.of(
                device("ana-1", "ana",
                        Map.of("c-g", seqs(1, 2, 3, 4, 5, 6, 7, 8), "c-1", seqs(1, 2, 3, 4)),
                        Map.of("c-g", 8L, "c-1", 4L), Map.of("c-g", 8L, "c-1", 4L),
                        Map.of("c-g", seqs(3, 6, 8), "c-1", seqs(2, 4))),
                device("ana-2", "ana", // offline, behind in c-g: allowed
                        Map.of("c-g", seqs(1, 2, 3), "c-1", seqs(1, 2, 3, 4)),
                        Map.of("c-g", 3L, "c-1", 4L), Map.of("c-g", 3L, "c-1", 4L),
                        Map.of("c-g", seqs(3), "c-1", seqs(4))),
                device("bob-1", "bob", // online, left c-g at 7: converges to 7 there, not the head
                        Map.of("c-g", seqs(2, 3, 4, 5, 6, 7), "c-1", seqs(2, 3, 4)),
                        Map.of("c-g", 7L, "c-1", 4L), Map.of("c-g", 7L, "c-1", 4L),
                        Map.of("c-g", seqs(4, 7), "c-1", seqs(4))),
                device("cy-1", "cy", // joined late at 5: stores nothing before
                        Map.of("c-g", seqs(5, 6, 7, 8)),
                        Map.of("c-g", 8L), Map.of("c-g", 8L),
                        Map.of("c-g", seqs(5, 8)))));

        List<String> online = new ArrayList<>(List.of("ana-1", "bob-1", "cy-1"));
        return new History(sends, committed, heads, topic, visibility, devices, online);
    }

    @Test
    void validHistoryPassesWithItsFigures() {
        CheckReport r = Checker.check(valid());
        assertTrue(r.ok(), () -> "unexpected: " + r.violations());
        Map<String, Long> expected = new LinkedHashMap<>();
        expected.put("sends", 8L);
        expected.put("sent", 6L);
        expected.put("rejected", 1L);
        expected.put("pending", 1L);
        expected.put("committed messages", 6L);
        expected.put("topic records", 13L);
        expected.put("topic duplicates", 1L);
        expected.put("devices", 4L);
        expected.put("online devices", 3L);
        expected.put("stored events", 12L + 7L + 9L + 4L);
        expected.put("violations", 0L);
        assertEquals(expected, r.figures());
        assertEquals(List.copyOf(expected.keySet()), List.copyOf(r.figures().keySet()), "insertion order");
    }

    @Test
    void emptyHistoryPasses() {
        CheckReport r = Checker.check(new History(List.of(), Map.of(), Map.of(), List.of(), Map.of(), List.of(), List.of()));
        assertTrue(r.ok());
        assertEquals(0L, r.figures().get("violations"));
    }

    // ---- writes -------------------------------------------------------------------------------

    @Test
    void lostWriteWhenSentSeqIsAbsent() {
        History h = valid();
        replaceSend(h, "y1", s -> send(s.device(), s.user(), s.conv(), s.cmid(), s.body(), Outcome.SENT, 9));
        Violation v = only(h, Kind.LOST_WRITE);
        assertNames(v, "conv=c-g", "device=cy-1", "seq=9", "cmid=y1");
    }

    @Test
    void lostWriteWhenCommittedBodyDiffers() {
        History h = valid();
        List<CommittedEvent> cg = h.committed().get("c-g");
        cg.set(7, msg("c-g", 8, "cy", "y1", "hey!"));
        Violation v = only(h, Kind.LOST_WRITE);
        assertNames(v, "conv=c-g", "seq=8", "cmid=y1", "body");
    }

    @Test
    void lostWriteWhenCommittedSenderOrKindDiffers() {
        History h = valid();
        h.committed().get("c-1").set(3, msg("c-1", 4, "bob", "a3", "re"));
        assertEquals(Set.of(Kind.LOST_WRITE), kinds(h)); // sender bob instead of ana

        History h2 = valid();
        h2.committed().get("c-1").set(3, new CommittedEvent("c-1", 4, "join", "ana", "a3", "re"));
        assertEquals(Set.of(Kind.LOST_WRITE), kinds(h2));
    }

    @Test
    void duplicateWhenOneCmidIsCommittedTwice() {
        History h = valid();
        // The PENDING send a2 was committed, and a1 of the same sender again at seq 6.
        h.committed().get("c-g").set(5, msg("c-g", 6, "ana", "a1", "hi"));
        Violation v = only(h, Kind.DUPLICATE_WRITE);
        assertNames(v, "conv=c-g", "seq=6", "cmid=a1", "sender=ana");
    }

    @Test
    void duplicateWhenPendingSendWasCommittedTwice() {
        History h = valid();
        h.committed().get("c-g").add(msg("c-g", 9, "ana", "a2", "welcome"));
        h.heads().put("c-g", 9L);
        h.topic().add(new TopicRecord("c-g", 9));
        // Keep everything else valid: online devices with an open period store 9 and reach it.
        for (String dev : List.of("ana-1", "cy-1")) {
            replaceDevice(h, dev, d -> {
                DeviceRecord m = mutable(d);
                m.stored().get("c-g").add(9L);
                m.localCursor().put("c-g", 9L);
                m.serverCursor().put("c-g", 9L);
                return m;
            });
        }
        assertEquals(Set.of(Kind.DUPLICATE_WRITE), kinds(h));
    }

    @Test
    void duplicateWhenTwoSentRepliesOfOneCmidDisagree() {
        History h = valid();
        h.sends().set(1, send("ana-1", "ana", "c-g", "a1", "hi", Outcome.SENT, 6));
        Set<Kind> k = kinds(h);
        assertTrue(k.contains(Kind.DUPLICATE_WRITE), k::toString);
        // The second reply names seq 6, which holds a2: that one is also a lost write.
        assertEquals(EnumSet.of(Kind.DUPLICATE_WRITE, Kind.LOST_WRITE), k);
    }

    @Test
    void gapWhenSeqThreeIsMissing() {
        History h = valid();
        // Seq 3 of c-1 vanished; drop what refers to it so that only the gap remains.
        h.committed().get("c-1").remove(2);
        h.sends().removeIf(s -> s.cmid().equals("b3"));
        h.topic().remove(new TopicRecord("c-1", 3));
        for (DeviceRecord d : List.copyOf(h.devices())) {
            replaceDevice(h, d.device(), x -> {
                DeviceRecord m = mutable(x);
                List<Long> st = m.stored().get("c-1");
                if (st != null) {
                    st.remove(3L);
                }
                return m;
            });
        }
        Violation v = only(h, Kind.SEQ_GAP);
        assertNames(v, "conv=c-1", "seq=3");
    }

    @Test
    void gapWhenASeqIsCommittedTwiceOrOutsideOneToHead() {
        History h = valid();
        h.committed().get("c-g").add(2, join("c-g", 2, "bob"));
        assertEquals(Set.of(Kind.SEQ_GAP), kinds(h));

        History h2 = valid();
        h2.committed().get("c-1").add(0, new CommittedEvent("c-1", 0, "leave", "bob", null, null));
        h2.topic().add(new TopicRecord("c-1", 0));
        assertEquals(Set.of(Kind.SEQ_GAP), kinds(h2));
    }

    @Test
    void notOnTopicWhenACommittedEventNeverReachedIt() {
        History h = valid();
        assertTrue(h.topic().remove(new TopicRecord("c-1", 4)));
        Violation v = only(h, Kind.NOT_ON_TOPIC);
        assertNames(v, "conv=c-1", "seq=4", "cmid=a3");
    }

    @Test
    void duplicateOnTheTopicIsOnlyAFigure() {
        History h = valid();
        h.topic().add(new TopicRecord("c-1", 4));
        h.topic().add(new TopicRecord("c-1", 4));
        CheckReport r = Checker.check(h);
        assertTrue(r.ok(), r.violations()::toString);
        assertEquals(3L, r.figures().get("topic duplicates"));
    }

    // ---- stores -------------------------------------------------------------------------------

    @Test
    void storeMissingAVisibleSeqBelowTheLocalCursor() {
        History h = valid();
        // ana-2 is offline: its c-1 cursor 4 claims 1..4, but 2 is not stored.
        replaceDevice(h, "ana-2", d -> {
            DeviceRecord m = mutable(d);
            m.stored().get("c-1").remove(2L);
            return m;
        });
        Violation v = only(h, Kind.STORE_MISSING);
        assertNames(v, "conv=c-1", "device=ana-2", "seq=2");
    }

    @Test
    void storeMissingOnAnOnlineDeviceEvenAboveItsCursor() {
        History h = valid();
        // bob-1 is online, left c-g at 7: 5 must be stored though the cursor says 7... and even
        // with a cursor of 4, an online device must hold everything visible.
        replaceDevice(h, "bob-1", d -> {
            DeviceRecord m = mutable(d);
            m.stored().get("c-g").remove(5L);
            m.localCursor().put("c-g", 4L);
            m.serverCursor().put("c-g", 4L);
            return m;
        });
        Violation v = only(h, Kind.STORE_MISSING);
        assertNames(v, "conv=c-g", "device=bob-1", "seq=5");
    }

    @Test
    void storeDuplicateWhenASeqIsStoredTwiceOrOutOfOrder() {
        History h = valid();
        replaceDevice(h, "ana-2", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-g", seqs(1, 2, 2, 3));
            return m;
        });
        Violation v = only(h, Kind.STORE_DUPLICATE);
        assertNames(v, "conv=c-g", "device=ana-2", "2,2");

        History h2 = valid();
        replaceDevice(h2, "ana-2", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-g", seqs(1, 3, 2));
            return m;
        });
        assertEquals(Set.of(Kind.STORE_DUPLICATE), kinds(h2));
    }

    @Test
    void storeInvisibleBeforeTheJoin() {
        History h = valid();
        replaceDevice(h, "cy-1", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-g", seqs(4, 5, 6, 7, 8));
            return m;
        });
        Violation v = only(h, Kind.STORE_INVISIBLE);
        assertNames(v, "conv=c-g", "device=cy-1", "seq=4");
    }

    @Test
    void storeInvisibleAfterTheLeave() {
        History h = valid();
        replaceDevice(h, "bob-1", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-g", seqs(2, 3, 4, 5, 6, 7, 8));
            return m;
        });
        Violation v = only(h, Kind.STORE_INVISIBLE);
        assertNames(v, "conv=c-g", "device=bob-1", "seq=8");
    }

    @Test
    void storeInvisibleInAConversationTheUserWasNeverIn() {
        History h = valid();
        replaceDevice(h, "cy-1", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-1", seqs(3));
            return m;
        });
        assertEquals(Set.of(Kind.STORE_INVISIBLE), kinds(h));
    }

    @Test
    void serverCursorAboveTheLocalOneIsAStoreMissing() {
        History h = valid();
        replaceDevice(h, "ana-2", d -> {
            DeviceRecord m = mutable(d);
            m.localCursor().put("c-g", 2L); // the store holds 1..3, but the device vouches only for 2
            return m;
        });
        Violation v = only(h, Kind.STORE_MISSING);
        assertNames(v, "conv=c-g", "device=ana-2", "server cursor 3", "local cursor 2");
    }

    // ---- cursors ------------------------------------------------------------------------------

    @Test
    void regressedCursor() {
        History h = valid();
        replaceDevice(h, "ana-1", d -> {
            DeviceRecord m = mutable(d);
            m.cursorHistory().put("c-g", seqs(5, 7, 6));
            return m;
        });
        Violation v = only(h, Kind.CURSOR_REGRESSED);
        assertNames(v, "conv=c-g", "device=ana-1", "seq=6", "after 7");
    }

    @Test
    void repeatedCursorValuesAreNotARegression() {
        History h = valid();
        replaceDevice(h, "ana-1", d -> {
            DeviceRecord m = mutable(d);
            m.cursorHistory().put("c-g", seqs(3, 3, 8, 8));
            return m;
        });
        assertTrue(Checker.check(h).ok());
    }

    @Test
    void cursorAboveTheHead() {
        History h = valid();
        replaceDevice(h, "ana-1", d -> {
            DeviceRecord m = mutable(d);
            m.cursorHistory().put("c-1", seqs(2, 4, 9));
            return m;
        });
        Violation v = only(h, Kind.CURSOR_ABOVE_HEAD);
        assertNames(v, "conv=c-1", "device=ana-1", "seq=9", "head 4");

        History h2 = valid();
        replaceDevice(h2, "ana-2", d -> {
            DeviceRecord m = mutable(d);
            m.localCursor().put("c-1", 6L);
            m.serverCursor().put("c-1", 6L);
            return m;
        });
        CheckReport r = Checker.check(h2);
        assertEquals(Set.of(Kind.CURSOR_ABOVE_HEAD), kinds(r));
        assertEquals(2, r.violations().size(), r.violations()::toString); // local and server
    }

    @Test
    void onlineDeviceNotConverged() {
        History h = valid();
        replaceDevice(h, "cy-1", d -> {
            DeviceRecord m = mutable(d);
            m.localCursor().put("c-g", 6L); // it holds 5..8, but its cursors stopped at 6
            m.serverCursor().put("c-g", 6L);
            return m;
        });
        Violation v = only(h, Kind.NOT_CONVERGED);
        assertNames(v, "conv=c-g", "device=cy-1", "seq=8");

        History h2 = valid();
        replaceDevice(h2, "ana-1", d -> {
            DeviceRecord m = mutable(d);
            m.serverCursor().put("c-1", 3L); // the server never heard the last ack
            return m;
        });
        assertEquals(Set.of(Kind.NOT_CONVERGED), kinds(h2));
    }

    @Test
    void aLaggingDeviceIsFineWhenOffline() {
        History h = valid();
        h.online().remove("cy-1");
        replaceDevice(h, "cy-1", d -> {
            DeviceRecord m = mutable(d);
            m.stored().put("c-g", seqs(5, 6));
            m.localCursor().put("c-g", 6L);
            m.serverCursor().put("c-g", 5L);
            return m;
        });
        assertTrue(Checker.check(h).ok());
        h.online().add("cy-1"); // the same device online must have converged
        assertEquals(EnumSet.of(Kind.NOT_CONVERGED, Kind.STORE_MISSING), kinds(h));
    }

    @Test
    void outboxLeftNonEmpty() {
        History h = valid();
        replaceDevice(h, "ana-1", d -> new DeviceRecord(d.device(), d.user(), d.stored(), d.localCursor(),
                d.serverCursor(), d.cursorHistory(), 2));
        Violation v = only(h, Kind.OUTBOX_NOT_EMPTY);
        assertNames(v, "device=ana-1", "2");
    }

    @Test
    void anOfflineDeviceMayStillHoldItsOutbox() {
        History h = valid();
        replaceDevice(h, "ana-2", d -> new DeviceRecord(d.device(), d.user(), d.stored(), d.localCursor(),
                d.serverCursor(), d.cursorHistory(), 2));
        assertTrue(Checker.check(h).ok(), "ana-2 is offline");
    }

    @Test
    void violationsAreCountedInTheFigures() {
        History h = valid();
        h.topic().removeIf(t -> t.conv().equals("c-1"));
        CheckReport r = Checker.check(h);
        assertEquals(4L, r.figures().get("violations"));
        assertEquals(Map.of(Kind.NOT_ON_TOPIC, 4L), Checker.countByKind(r.violations()));
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static Violation only(History h, Kind kind) {
        CheckReport r = Checker.check(h);
        assertEquals(Set.of(kind), kinds(r), () -> "violations: " + r.violations());
        assertEquals(1, r.violations().size(), () -> "violations: " + r.violations());
        assertEquals(1L, r.figures().get("violations"));
        return r.violations().get(0);
    }

    private static Set<Kind> kinds(History h) {
        return kinds(Checker.check(h));
    }

    private static Set<Kind> kinds(CheckReport r) {
        return r.violations().stream().map(Violation::kind).collect(Collectors.toCollection(() -> EnumSet.noneOf(Kind.class)));
    }

    private static void assertNames(Violation v, String... parts) {
        for (String p : parts) {
            assertTrue(v.detail().contains(p), () -> "detail lacks '" + p + "': " + v.detail());
        }
    }

    private static SendRecord send(String device, String user, String conv, String cmid, String body, Outcome o, long seq) {
        return new SendRecord(device, user, conv, cmid, body, o, seq);
    }

    private static CommittedEvent msg(String conv, long seq, String sender, String cmid, String body) {
        return new CommittedEvent(conv, seq, "msg", sender, cmid, body);
    }

    private static CommittedEvent join(String conv, long seq, String user) {
        return new CommittedEvent(conv, seq, "join", user, null, null);
    }

    private static List<Long> seqs(long... s) {
        List<Long> l = new ArrayList<>();
        for (long x : s) {
            l.add(x);
        }
        return l;
    }

    private static DeviceRecord device(String device, String user, Map<String, List<Long>> stored,
                                       Map<String, Long> local, Map<String, Long> server,
                                       Map<String, List<Long>> history) {
        return mutable(new DeviceRecord(device, user, stored, local, server, history, 0));
    }

    /** A copy of {@code d} whose maps and lists can be changed. */
    private static DeviceRecord mutable(DeviceRecord d) {
        Map<String, List<Long>> stored = new LinkedHashMap<>();
        d.stored().forEach((k, v) -> stored.put(k, new ArrayList<>(v)));
        Map<String, List<Long>> history = new LinkedHashMap<>();
        d.cursorHistory().forEach((k, v) -> history.put(k, new ArrayList<>(v)));
        return new DeviceRecord(d.device(), d.user(), stored, new LinkedHashMap<>(d.localCursor()),
                new LinkedHashMap<>(d.serverCursor()), history, d.outboxLeft());
    }

    private static void replaceDevice(History h, String device, UnaryOperator<DeviceRecord> f) {
        List<DeviceRecord> ds = h.devices();
        for (int i = 0; i < ds.size(); i++) {
            if (ds.get(i).device().equals(device)) {
                ds.set(i, f.apply(ds.get(i)));
                return;
            }
        }
        throw new AssertionError("no device " + device);
    }

    private static void replaceSend(History h, String cmid, UnaryOperator<SendRecord> f) {
        List<SendRecord> ss = h.sends();
        for (int i = 0; i < ss.size(); i++) {
            if (ss.get(i).cmid().equals(cmid)) {
                ss.set(i, f.apply(ss.get(i)));
                return;
            }
        }
        throw new AssertionError("no send " + cmid);
    }
}
