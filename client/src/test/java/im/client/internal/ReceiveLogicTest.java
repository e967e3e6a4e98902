package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.internal.ReceiveLogic.AckGivenUp;
import im.client.internal.ReceiveLogic.Action;
import im.client.internal.ReceiveLogic.RetryAck;
import im.client.internal.ReceiveLogic.ScheduleAckFlush;
import im.client.internal.ReceiveLogic.SendAck;
import im.client.internal.ReceiveLogic.SendSync;
import im.protocol.ConvState;
import im.protocol.ErrorCode;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReceiveLogicTest {
    private final ReceiveLogic logic = new ReceiveLogic(new RetryRule(Duration.ofMillis(100), Duration.ofSeconds(5), 3));

    @Test
    void storedPushSchedulesOneCoalescedAckWithTheCursorAtFlushTime() {
        logic.connected();
        assertEquals(List.of(new ScheduleAckFlush(false)), logic.onStored("c", 1, 1));
        assertEquals(List.of(), logic.onStored("c", 2, 2), "already scheduled");
        assertEquals(List.of(), logic.onStored("c", 3, 3));
        assertEquals(List.of(new SendAck("c", 3)), logic.flushAcks());
    }

    @Test
    void atMostOneAckInFlightPerConversationAndTheNextCarriesTheLatestCursor() {
        logic.connected();
        logic.onStored("c", 1, 1);
        assertEquals(List.of(new SendAck("c", 1)), logic.flushAcks());
        assertEquals(List.of(), logic.onStored("c", 2, 2), "one in flight: its reply schedules the next");
        assertEquals(List.of(), logic.onStored("c", 4, 4));
        assertEquals(List.of(new ScheduleAckFlush(false)), logic.onAcked("c", 1));
        assertEquals(List.of(new SendAck("c", 4)), logic.flushAcks());
        assertEquals(List.of(), logic.onAcked("c", 4));
        assertEquals(List.of(), logic.flushAcks(), "nothing new");
    }

    @Test
    void gapStartsOneSyncFromTheCursorAndFurtherGapsRerunItOnce() {
        logic.connected();
        logic.onStored("c", 5, 5);
        List<Action> a = logic.onStored("c", 5, 7); // 7 pushed, 6 missing
        assertEquals(new SendSync("c", 5), a.get(0));
        assertTrue(logic.syncing("c"));
        assertFalse(logic.onStored("c", 5, 9).stream().anyMatch(x -> x instanceof SendSync), "one loop at a time");
        assertEquals(List.of(new SendSync("c", 9)), logic.onSynced("c", 5, 9, false, 9).stream()
                .filter(x -> x instanceof SendSync).toList(), "rerun once from the new cursor");
        assertFalse(logic.onSynced("c", 9, 9, false, 9).stream().anyMatch(x -> x instanceof SendSync));
        assertFalse(logic.syncing("c"));
    }

    @Test
    void aSubbedPageLeftToCatchupStartsNoSyncAndACaughtUpRangeIsAcked() {
        logic.connected();
        List<Action> a = logic.onSubbed(List.of(new ConvState("c", 5, 0, 0, 0), new ConvState("d", 3, 3, 0, 0)), false);
        assertFalse(a.stream().anyMatch(x -> x instanceof SendSync), "the driver catches them up: " + a);
        assertEquals(List.of(new ScheduleAckFlush(false)), logic.onCaughtUp("c", 5, 5));
        assertEquals(List.of(), logic.onCaughtUp("d", 3, 3), "nothing above what the server holds");
        assertEquals(List.of(new SendAck("c", 5)), logic.flushAcks());
        assertEquals(List.of(new SendSync("d", 3)), logic.syncNow("d"), "a conversation still behind falls back to sync");
    }

    @Test
    void syncPagesWhileMoreThenStops() {
        logic.connected();
        assertEquals(List.of(new SendSync("c", 0)), logic.onHint("c", 300));
        assertEquals(new SendSync("c", 100), logic.onSynced("c", 0, 100, true, 300).get(0));
        assertEquals(new SendSync("c", 200), logic.onSynced("c", 100, 200, true, 300).get(0));
        List<Action> last = logic.onSynced("c", 200, 300, false, 300);
        assertFalse(last.stream().anyMatch(x -> x instanceof SendSync));
        assertFalse(logic.syncing("c"));
        assertEquals(List.of(new SendAck("c", 300)), logic.flushAcks(), "then ack");
    }

    @Test
    void pageWithMoreThatDoesNotAdvanceEndsTheLoopInsteadOfSpinning() {
        logic.connected();
        logic.onHint("c", 3);
        assertFalse(logic.onSynced("c", 0, 0, true, 3).stream().anyMatch(x -> x instanceof SendSync));
        assertFalse(logic.syncing("c"));
    }

    @Test
    void ackedAboveTheLocalCursorSyncsAndNeverRaisesTheCursor() {
        logic.connected();
        logic.onStored("c", 3, 3);
        logic.flushAcks();
        List<Action> a = logic.onAcked("c", 8); // restored old local state: server holds 8
        assertEquals(List.of(new SendSync("c", 3)), a);
        assertEquals(3, logic.cursorOf("c"));
        logic.onSynced("c", 3, 8, false, 8);
        assertEquals(List.of(), logic.flushAcks(), "server already has 8");
    }

    @Test
    void subbedSyncsConversationsBehindHeadAndAcksWhatTheServerDoesNotKnow() {
        logic.cursor("a", 5); // stored before a crash, ack never sent
        logic.cursor("b", 2);
        logic.connected();
        List<Action> a = logic.onSubbed(List.of(new ConvState("a", 5, 3, 0, 0), new ConvState("b", 9, 2, 0, 0),
                new ConvState("n", 4, 0, 0, 0)));
        assertTrue(a.contains(new SendSync("b", 2)));
        assertTrue(a.contains(new SendSync("n", 0)), "unknown conversation starts at 0");
        assertFalse(a.contains(new SendSync("a", 5)));
        assertTrue(a.contains(new ScheduleAckFlush(false)));
        assertEquals(List.of(new SendAck("a", 5)), logic.flushAcks());
    }

    @Test
    void reconnectResetsInFlightState() {
        logic.connected();
        logic.onStored("c", 2, 2);
        logic.flushAcks();
        logic.onHint("c", 4);
        logic.connected();
        assertFalse(logic.ackInFlight("c"));
        assertFalse(logic.syncing("c"));
        assertEquals(List.of(new SendSync("c", 2)), logic.onSubbed(List.of(new ConvState("c", 4, 0, 0, 0))).stream()
                .filter(x -> x instanceof SendSync).toList());
    }

    @Test
    void ackFailures() {
        logic.connected();
        logic.onStored("c", 7, 7);
        logic.flushAcks();
        assertEquals(List.of(new RetryAck("c", 1)), logic.onAckFailed("c", ErrorCode.UNAVAILABLE));
        assertEquals(List.of(), logic.flushAcks(), "a window flush does not cut the backoff short");
        assertEquals(List.of(new SendAck("c", 7)), logic.retryAck("c"), "retriable: retried after the backoff");
        assertEquals(List.of(new SendSync("c", 7)), logic.onAckFailed("c", ErrorCode.CURSOR_AHEAD));
        assertEquals(List.of(), logic.flushAcks(), "not repeated at once after CURSOR_AHEAD");
        assertEquals(List.of(new AckGivenUp("c", 7, 0)), logic.onAckFailed("c", ErrorCode.NOT_MEMBER));
        assertEquals(List.of(), logic.flushAcks(), "terminal: the value is not repeated");
    }

    @Test
    void consecutiveAckFailuresBackOffFurtherAndInternalIsCappedThenGivenUp() {
        logic.connected();
        logic.onStored("c", 7, 7);
        logic.flushAcks();
        assertEquals(List.of(new RetryAck("c", 1)), logic.onAckFailed("c", null), "timeout");
        logic.retryAck("c");
        assertEquals(List.of(new RetryAck("c", 2)), logic.onAckFailed("c", ErrorCode.INTERNAL));
        logic.retryAck("c");
        assertEquals(List.of(new RetryAck("c", 3)), logic.onAckFailed("c", ErrorCode.INTERNAL));
        logic.retryAck("c");
        assertEquals(List.of(new AckGivenUp("c", 7, 3)), logic.onAckFailed("c", ErrorCode.INTERNAL), "the cap is 3");
        assertEquals(List.of(), logic.retryAck("c"));
        assertEquals(List.of(), logic.flushAcks(), "given up: not repeated");

        logic.onStored("c", 8, 8);
        assertEquals(List.of(new SendAck("c", 8)), logic.flushAcks(), "a new cursor is acked again");
        assertEquals(List.of(new RetryAck("c", 1)), logic.onAckFailed("c", ErrorCode.INTERNAL), "counts start over");
        logic.retryAck("c");
        logic.onAcked("c", 8);
        logic.onStored("c", 9, 9);
        logic.flushAcks();
        assertEquals(List.of(new RetryAck("c", 1)), logic.onAckFailed("c", ErrorCode.INTERNAL), "a success resets them");
    }

    @Test
    void ackRefusedAsCursorAheadIsSentAgainOnceTheServerShowsTheHead() {
        logic.connected();
        logic.onStored("c", 7, 7);   // pushed before the commit was visible to the cursor service
        assertEquals(List.of(new SendAck("c", 7)), logic.flushAcks());
        assertEquals(List.of(new SendSync("c", 7)), logic.onAckFailed("c", ErrorCode.CURSOR_AHEAD));
        assertEquals(List.of(), logic.flushAcks(), "no retry loop while the server's head is unknown");
        assertFalse(logic.onHint("c", 6).contains(new ScheduleAckFlush(true)), "a head below the refused seq: still owed");
        assertEquals(List.of(), logic.flushAcks());
        assertTrue(logic.onHint("c", 7).contains(new ScheduleAckFlush(true)), "the head covers it now");
        assertEquals(List.of(new SendAck("c", 7)), logic.flushAcks(), "the local cursor is the truth: acked again");
        assertEquals(7, logic.cursorOf("c"));
        logic.onAckFailed("c", ErrorCode.CURSOR_AHEAD);
        assertTrue(logic.onSynced("c", 7, 7, false, 7).contains(new ScheduleAckFlush(true)), "a synced page's head counts too");
        assertEquals(List.of(new SendAck("c", 7)), logic.flushAcks());
        logic.onAckFailed("c", ErrorCode.CURSOR_AHEAD);
        logic.connected();
        logic.onSubbed(List.of(new ConvState("c", 7, 0, 0, 0)));
        assertEquals(List.of(new SendAck("c", 7)), logic.flushAcks(), "and a reconnect's subbed");
    }
}
