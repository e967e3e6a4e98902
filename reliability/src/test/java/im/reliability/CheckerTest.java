package im.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.reliability.History.CommittedEvent;
import im.reliability.History.CursorReport;
import im.reliability.History.CursorSource;
import im.reliability.History.DeviceRecord;
import im.reliability.History.MembershipOp;
import im.reliability.History.Outcome;
import im.reliability.History.Period;
import im.reliability.History.ReadReport;
import im.reliability.History.ReadSource;
import im.reliability.History.Seen;
import im.reliability.History.SendRecord;
import im.reliability.History.SentReply;
import im.reliability.History.Source;
import im.reliability.History.TopicRecord;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The checker must itself be tested: a hand-built valid history passes, and each rule is fed a
 * minimal mutation of it that breaks exactly that promise, and must report it (so no rule is one
 * that cannot fail).
 *
 * <p>The valid history:
 * <pre>
 * c-g (group), head 8                 c-1 (1:1 ana/bob), head 4
 *   1 join ana                           1 join ana
 *   2 join bob                           2 join bob
 *   3 msg ana a1 "hi"      SENT (twice)  3 msg bob b3 "dm"  SENT
 *   4 msg bob b1 "yo"      SENT          4 msg ana a3 "re"  SENT
 *   5 join cy   (admin API: join, seq 5)
 *   6 msg ana a2 "welcome" PENDING, committed
 *   7 leave bob (admin API: leave, seq 7; his later send b2 was REJECTED)
 *   8 msg cy y1 "hey"      SENT
 * visibility c-g: ana [1,∞) bob [2,7] cy [5,∞);  c-1: ana [1,∞) bob [2,∞)
 * installs: ana-1 (online, at the heads), ana-2 epoch 1 (reinstalled at t=1000, got one push at
 *           t=2500, within the bound), ana-2 epoch 2 (offline, lagging in c-g), bob-1 (online),
 *           cy-1 (online); the topic carries every event, c-g 3 twice.
 * read_cursors: c-g ana 4, bob 7 (his leave), cy none; c-1 ana 3. Read states told and SDK unread
 *           counts at the end: see {@code readStates}.
 * </pre>
 */
class CheckerTest {
    private static final long OPEN = Long.MAX_VALUE;

    // ---- the valid history ------------------------------------------------------------------

    /** A fresh, fully mutable valid history. */
    static History valid() {
        List<SendRecord> sends = new ArrayList<>(List.of(
                send("ana-1", "ana", "c-g", "a1", "hi", Outcome.SENT, new SentReply(3, false), new SentReply(3, true)),
                send("bob-1", "bob", "c-g", "b1", "yo", Outcome.SENT, new SentReply(4, false)),
                send("ana-2", "ana", "c-g", "a2", "welcome", Outcome.PENDING),
                send("cy-1", "cy", "c-g", "y1", "hey", Outcome.SENT, new SentReply(8, false)),
                send("bob-1", "bob", "c-g", "b2", "late", Outcome.REJECTED),
                send("bob-1", "bob", "c-1", "b3", "dm", Outcome.SENT, new SentReply(3, false)),
                send("ana-1", "ana", "c-1", "a3", "re", Outcome.SENT, new SentReply(4, false))));

        Map<String, List<CommittedEvent>> committed = new LinkedHashMap<>();
        committed.put("c-g", new ArrayList<>(List.of(
                member("c-g", 1, "join", "ana"),
                member("c-g", 2, "join", "bob"),
                msg("c-g", 3, "ana", "a1", "hi"),
                msg("c-g", 4, "bob", "b1", "yo"),
                member("c-g", 5, "join", "cy"),
                msg("c-g", 6, "ana", "a2", "welcome"),
                member("c-g", 7, "leave", "bob"),
                msg("c-g", 8, "cy", "y1", "hey"))));
        committed.put("c-1", new ArrayList<>(List.of(
                member("c-1", 1, "join", "ana"),
                member("c-1", 2, "join", "bob"),
                msg("c-1", 3, "bob", "b3", "dm"),
                msg("c-1", 4, "ana", "a3", "re"))));

        Map<String, Long> heads = new LinkedHashMap<>(Map.of("c-g", 8L, "c-1", 4L));

        List<TopicRecord> topic = new ArrayList<>();
        for (long s = 1; s <= 4; s++) {
            topic.add(new TopicRecord("c-g", s));
            topic.add(new TopicRecord("c-1", s));
        }
        topic.add(new TopicRecord("c-g", 3)); // a relay replay: duplicates on the topic are fine
        for (long s = 5; s <= 8; s++) topic.add(new TopicRecord("c-g", s));

        Map<String, Map<String, List<Period>>> visibility = new LinkedHashMap<>();
        visibility.put("c-g", new LinkedHashMap<>(Map.of(
                "ana", new ArrayList<>(List.of(new Period(1, OPEN))),
                "bob", new ArrayList<>(List.of(new Period(2, 7))),
                "cy", new ArrayList<>(List.of(new Period(5, OPEN))))));
        visibility.put("c-1", new LinkedHashMap<>(Map.of(
                "ana", new ArrayList<>(List.of(new Period(1, OPEN))),
                "bob", new ArrayList<>(List.of(new Period(2, OPEN))))));

        List<MembershipOp> ops = new ArrayList<>(List.of(
                new MembershipOp("c-g", "cy", "join", 5, true),
                new MembershipOp("c-g", "bob", "leave", 7, true),
                new MembershipOp("c-g", "bob", "leave", 7, false))); // a repeated DELETE: nothing changed

        // read_cursors: bob's c-g cursor is capped at his leave; cy has read nothing (no row)
        Map<String, Map<String, Long>> readCursors = new LinkedHashMap<>();
        readCursors.put("c-g", new LinkedHashMap<>(Map.of("ana", 4L, "bob", 7L)));
        readCursors.put("c-1", new LinkedHashMap<>(Map.of("ana", 3L)));

        History h = new History(sends, committed, heads, topic, visibility, ops, new ArrayList<>(), readCursors);
        List<DeviceRecord> devices = h.devices();
        devices.add(device(h, "ana-1", 1, "ana", true, 0,
                Map.of("c-g", seqs(1, 8), "c-1", seqs(1, 4)),
                Map.of("c-g", 8L, "c-1", 4L), Map.of("c-g", 8L, "c-1", 4L),
                List.of(report("c-g", 0, CursorSource.SUBBED), report("c-g", 3), report("c-g", 6), report("c-g", 6),
                        report("c-g", 8), report("c-1", 2), report("c-1", 4))));
        DeviceRecord old = device(h, "ana-2", 1, "ana", false, 1000, // replaced by epoch 2 at t=1000
                Map.of("c-g", seqs(1, 2)), Map.of("c-g", 2L), Map.of(), List.of(report("c-g", 2)));
        old.seen().add(new Seen(Source.PUSH, 1000 + Checker.REVOCATION_BOUND_MILLIS, event(h, "c-g", 3)));
        devices.add(old);
        devices.add(device(h, "ana-2", 2, "ana", false, 0, // offline, behind in c-g: allowed
                Map.of("c-g", seqs(1, 3), "c-1", seqs(1, 4)),
                Map.of("c-g", 3L, "c-1", 4L), Map.of("c-g", 3L, "c-1", 4L),
                List.of(report("c-g", 3), report("c-1", 4))));
        devices.add(device(h, "bob-1", 1, "bob", true, 0, // online, left c-g at 7: converges to 7 there, not the head
                Map.of("c-g", seqs(2, 7), "c-1", seqs(2, 4)),
                Map.of("c-g", 7L, "c-1", 4L), Map.of("c-g", 7L, "c-1", 4L),
                List.of(report("c-g", 4), report("c-g", 7), report("c-1", 4))));
        devices.add(device(h, "cy-1", 1, "cy", true, 0, // joined late at 5: stores nothing before
                Map.of("c-g", seqs(5, 8)), Map.of("c-g", 8L), Map.of("c-g", 8L),
                List.of(report("c-g", 4, CursorSource.SUBBED), report("c-g", 8))));
        readStates(h);
        return h;
    }

    /**
     * What the installs were told of read state and their SDK unread counts at the end (online ones):
     * ana read c-g to 4 (unread there: cy's 8) and c-1 to 3 (her own 4 does not count); bob read c-g
     * up to his leave (a lower read left it there) and nothing of c-1 (ana's 4 unread); cy read
     * nothing (ana's 6 unread, his own 8 not). Joins and leaves never count.
     */
    private static void readStates(History h) {
        DeviceRecord ana1 = device(h, "ana-1", 1);
        ana1.readReports().addAll(List.of(read("c-g", 0, 1, 4, ReadSource.SUBBED), read("c-g", 3, 1, 4, ReadSource.READACK),
                read("c-g", 4, 0, 6, ReadSource.UNREAD), read("c-1", 3, 0, 3, ReadSource.READACK)));
        ana1.unread().putAll(Map.of("c-g", 1L, "c-1", 0L));
        device(h, "ana-2", 2).readReports().add(read("c-g", 4, 0, 6, ReadSource.UNREAD));
        DeviceRecord bob1 = device(h, "bob-1", 1);
        bob1.readReports().addAll(List.of(read("c-g", 0, 1, 3, ReadSource.SUBBED), read("c-g", 7, 0, 7, ReadSource.READACK),
                read("c-g", 7, 0, 7, ReadSource.READACK), read("c-1", 0, 1, 4, ReadSource.SUBBED)));
        bob1.unread().putAll(Map.of("c-g", 0L, "c-1", 1L));
        DeviceRecord cy1 = device(h, "cy-1", 1);
        cy1.readReports().add(read("c-g", 0, 1, 6, ReadSource.SUBBED));
        cy1.unread().put("c-g", 1L);
    }

    @Test
    void validHistoryPassesWithItsFigures() {
        CheckReport r = Checker.check(valid());
        assertTrue(r.ok(), () -> "violations: " + r.violations());
        assertEquals(7L, r.figures().get("sends"));
        assertEquals(5L, r.figures().get("sent"));
        assertEquals(1L, r.figures().get("pending"));
        assertEquals(1L, r.figures().get("rejected"));
        assertEquals(6L, r.figures().get("committed messages"));
        assertEquals(1L, r.figures().get("topic duplicates"));
        assertEquals(1L, r.figures().get("sent dup:true replies"));
        assertEquals(3L, r.figures().get("membership ops"));
        assertEquals(5L, r.figures().get("installs"));
        assertEquals(3L, r.figures().get("online installs"));
        // ana-1 12, ana-2 epoch 1 2 + 1 late push, ana-2 epoch 2 7, bob-1 9, cy-1 4
        assertEquals(35L, r.figures().get("frames inspected for visibility"));
        assertEquals(10L, r.figures().get("read state reports"));
        assertEquals(5L, r.figures().get("unread counts compared"));
        assertEquals(0L, r.figures().get("violations"));
    }

    @Test
    void emptyHistoryPasses() {
        History h = new History(List.of(), Map.of(), Map.of(), List.of(), Map.of(), List.of(), List.of(), Map.of());
        assertTrue(Checker.check(h).ok());
    }

    // ---- writes -------------------------------------------------------------------------------

    @Test
    void lostWriteWhenTheSentSeqWasNeverCommitted() {
        History h = valid();
        replaceSend(h, "y1", s -> withReplies(s, new SentReply(9, false)));
        Violation v = only(h, Kind.LOST_WRITE);
        assertNames(v, "conv=c-g", "device=cy-1", "seq=9", "cmid=y1", "no committed event");
    }

    @Test
    void lostWriteAndPhantomWhenTheCommittedBodyIsNotTheOneSent() {
        History h = valid();
        replaceSend(h, "b1", s -> new SendRecord(s.device(), s.user(), s.conv(), s.cmid(), "yo!", s.outcome(), s.replies()));
        assertEquals(EnumSet.of(Kind.LOST_WRITE, Kind.PHANTOM_WRITE), kinds(h));
        assertNames(Checker.check(h).violations().get(0), "cmid=b1", "body \"yo\" instead of \"yo!\"");
    }

    @Test
    void lostWriteWhenTheSeqHoldsAnotherKindOfEvent() {
        History h = valid();
        // both replies name seq 5 (cy's join): consistent, but not this message
        replaceSend(h, "a1", s -> withReplies(s, new SentReply(5, false), new SentReply(5, true)));
        Violation v = only(h, Kind.LOST_WRITE);
        assertNames(v, "seq=5", "cmid=a1", "kind join", "sender cy");
    }

    @Test
    void duplicateWhenTheSentRepliesOfOneCmidNameDifferentSeqs() {
        History h = valid();
        replaceSend(h, "a1", s -> withReplies(s, new SentReply(3, false), new SentReply(6, true)));
        Set<Kind> k = kinds(h);
        assertTrue(k.contains(Kind.DUPLICATE_WRITE), () -> "got " + k);
        assertNames(first(h, Kind.DUPLICATE_WRITE), "cmid=a1", "[3, 6]");
    }

    @Test
    void duplicateWhenTwoRepliesOfOneCmidSayFresh() {
        History h = valid();
        replaceSend(h, "a1", s -> withReplies(s, new SentReply(3, false), new SentReply(3, false)));
        assertNames(only(h, Kind.DUPLICATE_WRITE), "cmid=a1", "2 sent replies said dup:false");
    }

    @Test
    void phantomWhenACommittedMessageHasNoRecordedSend() {
        History h = valid();
        h.sends().removeIf(s -> s.cmid().equals("b3"));
        assertNames(only(h, Kind.PHANTOM_WRITE), "conv=c-1", "seq=3", "sender=bob", "cmid=b3");
    }

    @Test
    void phantomWhenACmidWasSentToAnotherConversation() {
        History h = valid();
        replaceSend(h, "a2", s -> new SendRecord(s.device(), s.user(), "c-1", s.cmid(), s.body(), s.outcome(), s.replies()));
        assertNames(only(h, Kind.PHANTOM_WRITE), "conv=c-g", "seq=6", "cmid=a2", "conv=c-1");
    }

    @Test
    void gapWhenTheHeadIsAboveTheLastCommittedSeq() {
        History h = valid();
        h.heads().put("c-e", 2L); // a conversation whose head says 2 and that has no events
        assertNames(only(h, Kind.SEQ_GAP), "conv=c-e", "seq=1..2", "missing below head 2");
    }

    @Test
    void gapWhenASeqIsAboveTheHead() {
        History h = valid();
        h.committed().put("c-e", new ArrayList<>(List.of(member("c-e", 1, "join", "dan"))));
        h.topic().add(new TopicRecord("c-e", 1));
        h.visibility().put("c-e", Map.of("dan", List.of(new Period(1, OPEN))));
        h.heads().put("c-e", 0L);
        assertNames(only(h, Kind.SEQ_GAP), "conv=c-e", "seq=1", "outside 1..0");
    }

    @Test
    void notOnTopicWhenACommittedEventNeverReachedIt() {
        History h = valid();
        h.topic().removeIf(t -> t.equals(new TopicRecord("c-1", 4)));
        assertNames(only(h, Kind.NOT_ON_TOPIC), "conv=c-1", "seq=4", "cmid=a3");
    }

    // ---- membership ---------------------------------------------------------------------------

    @Test
    void membershipMismatchWhenTheTableDisagreesWithTheLog() {
        History h = valid();
        h.visibility().get("c-g").put("bob", List.of(new Period(2, OPEN))); // the table missed bob's leave
        assertNames(only(h, Kind.MEMBERSHIP_MISMATCH), "conv=c-g", "user=bob", "[Period[from=2, to=7]]");
    }

    @Test
    void membershipMismatchWhenAConfirmedChangeIsNotInTheLog() {
        History h = valid();
        h.membershipOps().add(new MembershipOp("c-g", "cy", "leave", 6, true));
        assertNames(only(h, Kind.MEMBERSHIP_MISMATCH), "conv=c-g", "seq=6", "user=cy", "answered leave", "msg of ana");
    }

    /** c-b: one bulk join at seq 1 adds dan, eve and fay; eve leaves at 2. */
    private static History withBulkJoin() {
        History h = valid();
        h.committed().put("c-b", new ArrayList<>(List.of(
                new CommittedEvent("c-b", 1, "join", "m-c-b-1", "dan", null, "", List.of("dan", "eve", "fay")),
                member("c-b", 2, "leave", "eve"))));
        h.topic().add(new TopicRecord("c-b", 1));
        h.topic().add(new TopicRecord("c-b", 2));
        h.heads().put("c-b", 2L);
        h.visibility().put("c-b", new LinkedHashMap<>(Map.of(
                "dan", List.of(new Period(1, OPEN)),
                "eve", List.of(new Period(1, 2)),
                "fay", List.of(new Period(1, OPEN)))));
        h.membershipOps().add(new MembershipOp("c-b", "fay", "join", 1, true));
        h.membershipOps().add(new MembershipOp("c-b", "eve", "leave", 2, true));
        return h;
    }

    @Test
    void aBulkJoinOpensAPeriodAtItsSeqForEveryUserItListsAndALaterLeaveClosesOne() {
        CheckReport r = Checker.check(withBulkJoin());
        assertTrue(r.ok(), () -> "violations: " + r.violations());
    }

    @Test
    void membershipMismatchWhenTheTableDisagreesWithABulkJoin() {
        History h = withBulkJoin();
        h.visibility().get("c-b").put("fay", List.of(new Period(2, OPEN)));   // the table put fay's period after the bulk join
        assertNames(only(h, Kind.MEMBERSHIP_MISMATCH), "conv=c-b", "user=fay", "[Period[from=1, to=" + OPEN + "]]");
        History twice = withBulkJoin();
        twice.committed().get("c-b").add(new CommittedEvent("c-b", 3, "join", "m-c-b-3", "gus", null, "", List.of("gus", "fay")));
        twice.topic().add(new TopicRecord("c-b", 3));
        twice.heads().put("c-b", 3L);
        twice.visibility().get("c-b").put("gus", List.of(new Period(3, OPEN)));
        assertNames(only(twice, Kind.MEMBERSHIP_MISMATCH), "conv=c-b", "seq=3", "user=fay", "already a member");
    }

    @Test
    void membershipMismatchWhenTheLogLeavesANonMember() {
        History h = valid();
        h.committed().put("c-e", new ArrayList<>(List.of(member("c-e", 1, "leave", "dan"))));
        h.topic().add(new TopicRecord("c-e", 1));
        h.heads().put("c-e", 1L);
        assertNames(only(h, Kind.MEMBERSHIP_MISMATCH), "conv=c-e", "seq=1", "user=dan", "not a member");
    }

    // ---- what devices received and stored -----------------------------------------------------

    @Test
    void frameInvisibleWhenARemovedMemberIsPushedALaterEvent() {
        History h = valid();
        device(h, "bob-1", 1).seen().add(new Seen(Source.PUSH, 5000, event(h, "c-g", 8)));
        assertNames(only(h, Kind.FRAME_INVISIBLE), "conv=c-g", "device=bob-1", "seq=8", "Period[from=2, to=7]");
    }

    @Test
    void frameInvisibleWhenALateJoinerIsSyncedHistoryBeforeTheJoin() {
        History h = valid();
        device(h, "cy-1", 1).seen().add(new Seen(Source.SYNC, 5000, event(h, "c-g", 3)));
        assertNames(only(h, Kind.FRAME_INVISIBLE), "conv=c-g", "device=cy-1", "seq=3");
    }

    @Test
    void storeInvisibleWhenTheSdkStoredAnEventAfterTheLeave() {
        History h = valid();
        device(h, "bob-1", 1).storedEvents().add(event(h, "c-g", 8));
        assertNames(only(h, Kind.STORE_INVISIBLE), "conv=c-g", "device=bob-1", "seq=8");
    }

    @Test
    void storeInvisibleWhenTheEndStoreHoldsAnEventOfAConversationTheUserWasNeverIn() {
        History h = valid();
        device(h, "cy-1", 1).stored().put("c-1", List.of(3L));
        assertNames(only(h, Kind.STORE_INVISIBLE), "conv=c-1", "device=cy-1", "seq=3");
    }

    @Test
    void contentMismatchWhenAStoredBodyDiffersFromTheCommittedOne() {
        History h = valid();
        List<CommittedEvent> st = device(h, "ana-1", 1).storedEvents();
        int i = st.indexOf(event(h, "c-g", 3));
        CommittedEvent e = st.get(i);
        st.set(i, new CommittedEvent(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), "HI"));
        assertNames(only(h, Kind.CONTENT_MISMATCH), "conv=c-g", "device=ana-1", "seq=3", "body \"HI\" instead of \"hi\"");
    }

    @Test
    void contentMismatchWhenAPushCarriesAnotherMidSenderOrCmid() {
        History h = valid();
        CommittedEvent e = event(h, "c-1", 4);
        device(h, "bob-1", 1).seen().add(new Seen(Source.PUSH, 5000,
                new CommittedEvent(e.conv(), e.seq(), e.kind(), "m-other", "bob", "b3", e.body())));
        assertNames(only(h, Kind.CONTENT_MISMATCH), "conv=c-1", "device=bob-1", "seq=4", "mid m-other", "sender bob", "cmid b3");
    }

    @Test
    void contentMismatchWhenAFrameHasASeqThatWasNeverCommitted() {
        History h = valid();
        CommittedEvent e = event(h, "c-1", 4);
        device(h, "ana-1", 1).seen().add(new Seen(Source.SYNC, 5000,
                new CommittedEvent("c-1", 3, e.kind(), e.mid(), e.sender(), e.cmid(), e.body())));
        Violation v = only(h, Kind.CONTENT_MISMATCH);
        assertNames(v, "conv=c-1", "seq=3 (SYNC");
    }

    @Test
    void storeDuplicateWhenOneEventIsReportedStoredTwice() {
        History h = valid();
        device(h, "cy-1", 1).storedEvents().add(event(h, "c-g", 6));
        assertNames(only(h, Kind.STORE_DUPLICATE), "conv=c-g", "device=cy-1", "seq=6");
    }

    @Test
    void staleInstallReadWhenAReinstalledDeviceStillReceivesAfterTheBound() {
        History h = valid();
        device(h, "ana-2", 1).seen().add(new Seen(Source.SYNC, 1000 + Checker.REVOCATION_BOUND_MILLIS + 1, event(h, "c-g", 4)));
        assertNames(only(h, Kind.STALE_INSTALL_READ), "conv=c-g", "device=ana-2", "epoch=1", "seq=4");
    }

    @Test
    void storeMissingAVisibleSeqBelowTheLocalCursor() {
        History h = valid();
        device(h, "ana-2", 2).stored().put("c-g", List.of(1L, 3L));
        assertNames(only(h, Kind.STORE_MISSING), "conv=c-g", "device=ana-2", "seq=2", "local cursor 3");
    }

    @Test
    void storeMissingOnAnOnlineDeviceEvenAboveItsCursor() {
        History h = valid();
        DeviceRecord cy = device(h, "cy-1", 1);
        cy.stored().put("c-g", List.of(5L, 6L, 7L));
        Set<Kind> k = kinds(h);
        assertTrue(k.contains(Kind.STORE_MISSING), () -> "got " + k);
        assertNames(first(h, Kind.STORE_MISSING), "device=cy-1", "seq=8", "online");
    }

    @Test
    void storeMissingWhenTheServerCursorIsAboveTheLocalOne() {
        History h = valid();
        device(h, "ana-2", 2).serverCursor().put("c-g", 5L);
        assertNames(only(h, Kind.STORE_MISSING), "device=ana-2", "server cursor 5", "local cursor 3");
    }

    // ---- cursors ------------------------------------------------------------------------------

    @Test
    void cursorRegressedWhenAnAckedReplyIsBelowAnEarlierOne() {
        History h = valid();
        device(h, "ana-1", 1).cursorReports().add(report("c-g", 6));
        assertNames(only(h, Kind.CURSOR_REGRESSED), "conv=c-g", "device=ana-1", "cursor 6 after 8");
    }

    @Test
    void cursorRegressedWhenASubbedReplyIsBelowTheLastAck() {
        History h = valid();
        device(h, "bob-1", 1).cursorReports().add(report("c-1", 3, CursorSource.SUBBED));
        assertNames(only(h, Kind.CURSOR_REGRESSED), "conv=c-1", "device=bob-1", "SUBBED", "cursor 3 after 4");
    }

    @Test
    void cursorAboveTheHeadVisibleToAFormerMember() {
        History h = valid();
        device(h, "bob-1", 1).cursorReports().add(report("c-g", 8)); // bob left at 7; head 8
        assertNames(only(h, Kind.CURSOR_ABOVE_HEAD), "conv=c-g", "device=bob-1", "seq=8", "visible to the user, 7");
    }

    @Test
    void cursorAboveTheHeadAtTheEnd() {
        History h = valid();
        device(h, "ana-1", 1).localCursor().put("c-1", 5L);
        device(h, "ana-1", 1).serverCursor().put("c-1", 5L);
        Set<Kind> k = kinds(h);
        assertEquals(EnumSet.of(Kind.CURSOR_ABOVE_HEAD), k);
        assertEquals(2, Checker.check(h).violations().size());
    }

    @Test
    void onlineDeviceNotConverged() {
        History h = valid();
        device(h, "cy-1", 1).localCursor().put("c-g", 7L);
        device(h, "cy-1", 1).serverCursor().put("c-g", 7L);
        assertNames(only(h, Kind.NOT_CONVERGED), "conv=c-g", "device=cy-1", "seq=8", "local cursor 7", "server cursor 7");
    }

    @Test
    void aLaggingDeviceIsFineWhenOffline() {
        History h = valid();
        DeviceRecord d = device(h, "ana-2", 2);
        assertTrue(d.localCursor().get("c-g") < 8 && !d.online());
        assertTrue(Checker.check(h).ok());
    }

    @Test
    void outboxLeftNonEmptyOnAnOnlineDevice() {
        History h = valid();
        replaceDevice(h, "cy-1", 1, d -> withOutbox(d, 2));
        assertNames(only(h, Kind.OUTBOX_NOT_EMPTY), "device=cy-1", "2 send(s)");
    }

    @Test
    void anOfflineDeviceMayStillHoldItsOutbox() {
        History h = valid();
        replaceDevice(h, "ana-2", 2, d -> withOutbox(d, 1));
        assertTrue(Checker.check(h).ok());
    }

    @Test
    void violationsAreCountedInTheFigures() {
        History h = valid();
        device(h, "bob-1", 1).seen().add(new Seen(Source.PUSH, 5000, event(h, "c-g", 8)));
        h.topic().removeIf(t -> t.conv().equals("c-1"));
        CheckReport r = Checker.check(h);
        assertEquals(5L, r.figures().get("violations"));
        assertEquals(Map.of(Kind.NOT_ON_TOPIC, 4L, Kind.FRAME_INVISIBLE, 1L), Checker.countByKind(r.violations()));
    }

    // ---- read state ---------------------------------------------------------------------------

    @Test
    void unreadNegativeWhenAReadStateSaysSo() {
        History h = valid();
        device(h, "ana-1", 1).readReports().set(2, read("c-g", 4, -1, 6, ReadSource.UNREAD));
        assertNames(only(h, Kind.UNREAD_NEGATIVE), "conv=c-g", "device=ana-1", "UNREAD", "unread -1", "report #3");
    }

    @Test
    void unreadNegativeInASubbedEntry() {
        History h = valid();
        device(h, "cy-1", 1).readReports().set(0, read("c-g", 0, -2, 6, ReadSource.SUBBED));
        assertNames(only(h, Kind.UNREAD_NEGATIVE), "device=cy-1", "SUBBED", "unread -2");
    }

    @Test
    void readAboveHeadWhenAFormerMemberIsToldACursorAfterItsLeave() {
        History h = valid();
        // bob left c-g at 7; the final cursor (7) agrees, the report does not
        device(h, "bob-1", 1).readReports().add(read("c-g", 8, 0, 8, ReadSource.READACK));
        Violation v = first(h, Kind.READ_ABOVE_HEAD);
        assertNames(v, "conv=c-g", "device=bob-1", "seq=8", "head visible to the user, 7");
    }

    @Test
    void readAboveHeadWhenTheCursorIsAboveTheStatesOwnHead() {
        History h = valid();
        device(h, "ana-1", 1).readReports().add(read("c-g", 4, 0, 3, ReadSource.READACK));
        assertNames(only(h, Kind.READ_ABOVE_HEAD), "device=ana-1", "seq=4", "state's own head");
    }

    @Test
    void readRegressedWhenAnInstallsReadacksGoDown() {
        History h = valid();
        // a readack of 2 after one of 3: the server answered this install's reads out of order or lowered the cursor
        device(h, "ana-1", 1).readReports().add(2, read("c-g", 2, 1, 4, ReadSource.READACK));
        assertNames(only(h, Kind.READ_REGRESSED), "device=ana-1", "seq=2", "after a readack with read 3");
    }

    @Test
    void readRegressedWhenAReportedCursorIsAboveTheFinalOne() {
        History h = valid();
        h.readCursors().get("c-1").put("ana", 2L);   // ana-1 was told 3: the cursor went down after that
        Set<Kind> k = kinds(h);
        assertTrue(k.contains(Kind.READ_REGRESSED), () -> "got " + k);
        assertNames(first(h, Kind.READ_REGRESSED), "conv=c-1", "device=ana-1", "seq=3", "read cursor at the end, 2");
    }

    @Test
    void pushesAndSubbedMayArriveOutOfOrderAcrossSources() {
        History h = valid();
        // a newer state by sub, then an older push still in flight: the protocol allows any order
        DeviceRecord ana1 = device(h, "ana-1", 1);
        ana1.readReports().add(read("c-g", 4, 1, 8, ReadSource.SUBBED));
        ana1.readReports().add(read("c-g", 3, 1, 4, ReadSource.UNREAD));
        assertTrue(Checker.check(h).ok(), () -> "violations: " + Checker.check(h).violations());
    }

    @Test
    void unreadDisagreesWhenAReadStateMiscountsTheLog() {
        History h = valid();
        // (0, 6] visible to cy: join 5 (never counts) and ana's 6
        device(h, "cy-1", 1).readReports().set(0, read("c-g", 0, 2, 6, ReadSource.SUBBED));
        assertNames(only(h, Kind.UNREAD_DISAGREES), "device=cy-1", "SUBBED", "the log has 1");
    }

    @Test
    void unreadDisagreesWhenAStateCountsTheUsersOwnMessage() {
        History h = valid();
        device(h, "ana-1", 1).readReports().set(3, read("c-1", 3, 1, 4, ReadSource.READACK));   // 4 is ana's own
        assertNames(only(h, Kind.UNREAD_DISAGREES), "conv=c-1", "device=ana-1", "the log has 0");
    }

    @Test
    void unreadDisagreesWhenOneOfAUsersOnlineDevicesShowsAnotherCount() {
        History h = valid();
        DeviceRecord ana3 = device(h, "ana-3", 1, "ana", true, 0,
                Map.of("c-g", seqs(1, 8), "c-1", seqs(1, 4)), Map.of("c-g", 8L, "c-1", 4L), Map.of("c-g", 8L, "c-1", 4L),
                List.of(report("c-g", 8), report("c-1", 4)));
        ana3.unread().putAll(Map.of("c-g", 2L, "c-1", 0L));   // missed the read that took c-g down to 1
        h.devices().add(ana3);
        Violation v = only(h, Kind.UNREAD_DISAGREES);
        assertNames(v, "conv=c-g", "user=ana", "device=ana-3 unread 2", "the log has 1", "read cursor 4");
        assertTrue(!v.detail().contains("device=ana-1 unread"), v::detail);
    }

    @Test
    void unreadDisagreesWhenTheOnlyDeviceCountsWrong() {
        History h = valid();
        device(h, "bob-1", 1).unread().put("c-1", 0L);   // ana's 4 is unread: bob never read c-1
        assertNames(only(h, Kind.UNREAD_DISAGREES), "conv=c-1", "user=bob", "device=bob-1 unread 0", "the log has 1");
    }

    @Test
    void unreadAtTheEndIsNotJudgedForOfflineInstalls() {
        History h = valid();
        device(h, "ana-2", 2).unread().put("c-g", 5L);   // offline: has not caught up, nothing promised
        assertTrue(Checker.check(h).ok(), () -> "violations: " + Checker.check(h).violations());
    }

    // ---- edits and recalls -------------------------------------------------------------------

    /**
     * {@link #valid()} with edits and recalls in c-1 (head 7): 5 ana's edit a4 of her 4 to "re!"; 6 bob's
     * message b4 "oops"; 7 bob's recall b5 of 6, whose {@code sent} reached him at t=5000 (a second
     * recall b6 of 6 was answered with 7, dup). The events row of 6 is empty. bob-1 was pushed 6 with its
     * body at t=4000 (before the recall); ana-1 synced it with its body by a request sent at t=4900,
     * answered at 5100. ana-1 and bob-1 hold 5..7 (6 as a tombstone) and show 4 as "re!", 6 as "";
     * ana-2 epoch 2 is offline at 4 and may hold anything it had.
     */
    static History withChanges() {
        History h = valid();
        h.sends().addAll(List.of(
                change("ana-1", "ana", "a4", "edit", 4, "re!", new SentReply(5, false, 3000)),
                send("bob-1", "bob", "c-1", "b4", "oops", Outcome.SENT, new SentReply(6, false, 3500)),
                change("bob-1", "bob", "b5", "recall", 6, "", new SentReply(7, false, 5000)),
                change("bob-1", "bob", "b6", "recall", 6, "", new SentReply(7, true, 5200))));
        h.committed().get("c-1").addAll(List.of(
                CommittedEvent.change("c-1", 5, "edit", "m-c-1-5", "ana", "a4", "re!", 4),
                msg("c-1", 6, "bob", "b4", ""),
                CommittedEvent.change("c-1", 7, "recall", "m-c-1-7", "bob", "b5", "", 6)));
        h.heads().put("c-1", 7L);
        for (long s = 5; s <= 7; s++) h.topic().add(new TopicRecord("c-1", s));
        Map<Long, String> bodies = Map.of(3L, "dm", 4L, "re", 5L, "re!", 6L, "");
        Map<Long, String> shown = Map.of(3L, "dm", 4L, "re!", 6L, "");
        for (String dev : List.of("ana-1", "bob-1")) {
            DeviceRecord d = device(h, dev, 1);
            for (long s = 5; s <= 7; s++) {
                d.stored().get("c-1").add(s);
                d.seen().add(new Seen(Source.PUSH, 4000 + s, event(h, "c-1", s)));
                d.storedEvents().add(event(h, "c-1", s));
            }
            d.localCursor().put("c-1", 7L);
            d.serverCursor().put("c-1", 7L);
            replaceDevice(h, dev, 1, x -> withStore(x, Map.of("c-1", bodies), Map.of("c-1", shown)));
        }
        device(h, "bob-1", 1).seen().add(new Seen(Source.PUSH, 4000, msg("c-1", 6, "bob", "b4", "oops")));
        device(h, "ana-1", 1).seen().add(new Seen(Source.SYNC, 5100, msg("c-1", 6, "bob", "b4", "oops"), 4900));
        device(h, "ana-1", 1).unread().put("c-1", 1L); // bob's 6 counts, recalled or not
        return h;
    }

    @Test
    void historyWithEditsAndRecallsPasses() {
        CheckReport r = Checker.check(withChanges());
        assertTrue(r.ok(), () -> "violations: " + r.violations());
        assertEquals(1L, r.figures().get("committed edits"));
        assertEquals(1L, r.figures().get("committed recalls"));
        assertEquals(1L, r.figures().get("recalled messages and edits"));
    }

    @Test
    void recalledBodyServedWhenASyncRequestedAfterTheRecallWasConfirmedCarriesIt() {
        History h = withChanges();
        device(h, "bob-1", 1).seen().add(new Seen(Source.SYNC, 5300, msg("c-1", 6, "bob", "b4", "oops"), 5001));
        assertNames(only(h, Kind.RECALLED_BODY_SERVED), "conv=c-1", "device=bob-1", "seq=6", "SYNC requested at 5001",
                "recall 7 confirmed to its sender at 5000");
    }

    @Test
    void recalledBodyServedWhenACatchUpCarriesAnEditOfARecalledMessage() {
        History h = withChanges();
        // an edit of 6 by bob, emptied by the recall with the message (the checker finds a message's edits by
        // ref, wherever they are in the log; that the platform refuses an edit after the recall is not a rule here)
        h.sends().add(change("bob-1", "bob", "b7", "edit", 6, "oops2", new SentReply(8, false, 4500)));
        h.committed().get("c-1").add(CommittedEvent.change("c-1", 8, "edit", "m-c-1-8", "bob", "b7", "", 6));
        h.heads().put("c-1", 8L);
        h.topic().add(new TopicRecord("c-1", 8));
        for (String dev : List.of("ana-1", "bob-1")) {
            DeviceRecord d = device(h, dev, 1);
            d.stored().get("c-1").add(8L);
            d.storedEvents().add(event(h, "c-1", 8));
            d.localCursor().put("c-1", 8L);
            d.serverCursor().put("c-1", 8L);
        }
        device(h, "ana-1", 1).seen().add(new Seen(Source.CATCHUP, 6000,
                CommittedEvent.change("c-1", 8, "edit", "m-c-1-8", "bob", "b7", "oops2", 6), 5900));
        assertNames(only(h, Kind.RECALLED_BODY_SERVED), "device=ana-1", "seq=8", "CATCHUP");
    }

    @Test
    void recalledBodyServedWhenTheEventsRowKeepsTheBody() {
        History h = withChanges();
        List<CommittedEvent> log = h.committed().get("c-1");
        log.set(5, msg("c-1", 6, "bob", "b4", "oops"));
        assertNames(only(h, Kind.RECALLED_BODY_SERVED), "conv=c-1", "seq=6", "recalled by seq 7", "events row");
    }

    @Test
    void recalledBodyServedWhenAStoreHoldsTheBodyNextToTheRecall() {
        History h = withChanges();
        replaceDevice(h, "bob-1", 1, d -> withStore(d, Map.of("c-1", Map.of(3L, "dm", 4L, "re", 5L, "re!", 6L, "oops")), d.shown()));
        assertNames(only(h, Kind.RECALLED_BODY_SERVED), "conv=c-1", "device=bob-1", "seq=6", "the store holds the body");
    }

    @Test
    void anOfflineStoreBehindTheRecallMayKeepTheBodyButNotOncePastIt() {
        History h = withChanges();
        DeviceRecord off = device(h, "ana-2", 2);
        off.stored().get("c-1").addAll(List.of(5L, 6L));
        off.storedEvents().add(event(h, "c-1", 5));
        off.localCursor().put("c-1", 6L); // stored 6 before the recall came: allowed
        replaceDevice(h, "ana-2", 2, d -> withStore(d, Map.of("c-1", Map.of(6L, "oops")), Map.of()));
        assertTrue(Checker.check(h).ok(), () -> "violations: " + Checker.check(h).violations());
        device(h, "ana-2", 2).localCursor().put("c-1", 7L);
        device(h, "ana-2", 2).stored().get("c-1").add(7L);
        assertNames(only(h, Kind.RECALLED_BODY_SERVED), "device=ana-2 epoch=2", "seq=6");
    }

    @Test
    void recallNotAppliedWhenAnOnlineDeviceStillShowsTheText() {
        History h = withChanges();
        replaceDevice(h, "ana-1", 1, d -> withStore(d, d.bodies(), Map.of("c-1", Map.of(3L, "dm", 4L, "re!", 6L, "oops"))));
        assertNames(only(h, Kind.RECALL_NOT_APPLIED), "conv=c-1", "device=ana-1", "seq=6 shows \"oops\"");
    }

    @Test
    void editNotAppliedWhenAnOnlineDeviceShowsTheOriginalText() {
        History h = withChanges();
        replaceDevice(h, "bob-1", 1, d -> withStore(d, d.bodies(), Map.of("c-1", Map.of(3L, "dm", 4L, "re", 6L, ""))));
        assertNames(only(h, Kind.EDIT_NOT_APPLIED), "conv=c-1", "device=bob-1", "seq=4 shows \"re\" instead of \"re!\" (edit 5)");
    }

    @Test
    void contentMismatchWhenARecalledMessageArrivesWithABodyItNeverHad() {
        History h = withChanges();
        device(h, "bob-1", 1).seen().add(new Seen(Source.PUSH, 4001, msg("c-1", 6, "bob", "b4", "oops!")));
        assertNames(only(h, Kind.CONTENT_MISMATCH), "conv=c-1", "device=bob-1", "seq=6");
    }

    @Test
    void lostWriteAndPhantomWhenAnEditIsCommittedWithAnotherText() {
        History h = withChanges();
        replaceSend(h, "a4", s -> new SendRecord(s.device(), s.user(), s.conv(), s.cmid(), "re?", s.outcome(), s.replies(),
                s.kind(), s.ref()));
        assertEquals(EnumSet.of(Kind.LOST_WRITE, Kind.PHANTOM_WRITE), kinds(h));
        assertNames(first(h, Kind.LOST_WRITE), "cmid=a4", "seq=5", "body \"re!\" instead of \"re?\"");
    }

    @Test
    void lostWriteWhenARecallIsAnsweredWithTheMessagesSeq() {
        History h = withChanges();
        replaceSend(h, "b5", s -> withReplies(s, new SentReply(6, false, 5000)));
        assertNames(only(h, Kind.LOST_WRITE), "cmid=b5", "seq=6", "kind msg", "ref 0");
    }

    @Test
    void lostWriteWhenAFreshRecallNamesAnotherSendersRecall() {
        History h = withChanges();
        // b6 said dup:false for seq 7, which holds b5: only an answer from the first recall (dup) may name it
        replaceSend(h, "b6", s -> withReplies(s, new SentReply(7, false, 5200)));
        assertNames(only(h, Kind.LOST_WRITE), "cmid=b6", "seq=7", "cmid b5");
    }

    @Test
    void phantomWhenACommittedEditHasNoRecordedSend() {
        History h = withChanges();
        h.sends().removeIf(s -> s.cmid().equals("a4"));
        assertNames(only(h, Kind.PHANTOM_WRITE), "conv=c-1", "seq=5", "cmid=a4");
    }

    @Test
    void duplicateWhenTwoRepliesOfOneRecallSayFresh() {
        History h = withChanges();
        replaceSend(h, "b5", s -> withReplies(s, new SentReply(7, false, 5000), new SentReply(7, false, 5100)));
        assertNames(only(h, Kind.DUPLICATE_WRITE), "cmid=b5", "2 sent replies said dup:false");
    }

    private static SendRecord change(String device, String user, String cmid, String kind, long ref, String body, SentReply... replies) {
        return new SendRecord(device, user, "c-1", cmid, body, Outcome.SENT, new ArrayList<>(List.of(replies)), kind, ref);
    }

    private static DeviceRecord withStore(DeviceRecord d, Map<String, Map<Long, String>> bodies, Map<String, Map<Long, String>> shown) {
        return new DeviceRecord(d.device(), d.epoch(), d.user(), d.online(), d.retiredMillis(), d.stored(), d.localCursor(),
                d.serverCursor(), d.seen(), d.storedEvents(), d.cursorReports(), d.outboxLeft(), d.readReports(), d.unread(),
                bodies, shown);
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** Asserts that the history has exactly one violation, of kind {@code k}, and returns it. */
    private static Violation only(History h, Kind k) {
        CheckReport r = Checker.check(h);
        assertEquals(1, r.violations().size(), () -> "expected exactly one " + k + ", got " + r.violations());
        assertEquals(k, r.violations().get(0).kind(), () -> "got " + r.violations());
        return r.violations().get(0);
    }

    private static Violation first(History h, Kind k) {
        return Checker.check(h).violations().stream().filter(v -> v.kind() == k).findFirst().orElseThrow();
    }

    private static Set<Kind> kinds(History h) {
        return Checker.check(h).violations().stream().map(Violation::kind)
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(Kind.class)));
    }

    private static void assertNames(Violation v, String... parts) {
        for (String p : parts) {
            assertTrue(v.detail().contains(p), () -> "detail lacks '" + p + "': " + v.detail());
        }
    }

    private static SendRecord send(String device, String user, String conv, String cmid, String body, Outcome o,
                                   SentReply... replies) {
        return new SendRecord(device, user, conv, cmid, body, o, new ArrayList<>(List.of(replies)));
    }

    private static SendRecord withReplies(SendRecord s, SentReply... replies) {
        return new SendRecord(s.device(), s.user(), s.conv(), s.cmid(), s.body(), s.outcome(), List.of(replies), s.kind(), s.ref());
    }

    private static CommittedEvent msg(String conv, long seq, String sender, String cmid, String body) {
        return new CommittedEvent(conv, seq, "msg", "m-" + conv + "-" + seq, sender, cmid, body);
    }

    private static CommittedEvent member(String conv, long seq, String kind, String user) {
        return new CommittedEvent(conv, seq, kind, "m-" + conv + "-" + seq, user, null, "");
    }

    private static CommittedEvent event(History h, String conv, long seq) {
        return h.committed().get(conv).stream().filter(e -> e.seq() == seq).findFirst().orElseThrow();
    }

    private static List<Long> seqs(long from, long to) {
        List<Long> l = new ArrayList<>();
        for (long x = from; x <= to; x++) l.add(x);
        return l;
    }

    private static ReadReport read(String conv, long read, long unread, long head, ReadSource source) {
        return new ReadReport(conv, read, unread, head, source, 0);
    }

    private static CursorReport report(String conv, long delivered) {
        return report(conv, delivered, CursorSource.ACKED);
    }

    private static CursorReport report(String conv, long delivered, CursorSource s) {
        return new CursorReport(conv, delivered, s);
    }

    /**
     * An install whose end store is {@code stored}, that saw every stored event once (the lower half
     * of each conversation by sync, the rest pushed) and was reported stored once each.
     */
    private static DeviceRecord device(History h, String device, int epoch, String user, boolean online, long retired,
                                       Map<String, List<Long>> stored, Map<String, Long> local, Map<String, Long> server,
                                       List<CursorReport> reports) {
        List<Seen> seen = new ArrayList<>();
        List<CommittedEvent> storedEvents = new ArrayList<>();
        Map<String, List<Long>> st = new LinkedHashMap<>();
        new java.util.TreeMap<>(stored).forEach((conv, seqs) -> {
            st.put(conv, new ArrayList<>(seqs));
            for (int i = 0; i < seqs.size(); i++) {
                CommittedEvent e = event(h, conv, seqs.get(i));
                seen.add(new Seen(i < seqs.size() / 2 ? Source.SYNC : Source.PUSH, 100 + i, e));
                storedEvents.add(e);
            }
        });
        return new DeviceRecord(device, epoch, user, online, retired, st, new LinkedHashMap<>(local),
                new LinkedHashMap<>(server), seen, storedEvents, new ArrayList<>(reports), 0, new ArrayList<>(), new LinkedHashMap<>());
    }

    private static DeviceRecord device(History h, String device, int epoch) {
        return h.devices().stream().filter(d -> d.device().equals(device) && d.epoch() == epoch).findFirst().orElseThrow();
    }

    private static DeviceRecord withOutbox(DeviceRecord d, int n) {
        return new DeviceRecord(d.device(), d.epoch(), d.user(), d.online(), d.retiredMillis(), d.stored(), d.localCursor(),
                d.serverCursor(), d.seen(), d.storedEvents(), d.cursorReports(), n, d.readReports(), d.unread(), d.bodies(), d.shown());
    }

    private static void replaceDevice(History h, String device, int epoch, java.util.function.UnaryOperator<DeviceRecord> f) {
        List<DeviceRecord> ds = h.devices();
        for (int i = 0; i < ds.size(); i++) {
            if (ds.get(i).device().equals(device) && ds.get(i).epoch() == epoch) {
                ds.set(i, f.apply(ds.get(i)));
                return;
            }
        }
        throw new AssertionError("no device " + device);
    }

    private static void replaceSend(History h, String cmid, java.util.function.UnaryOperator<SendRecord> f) {
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
