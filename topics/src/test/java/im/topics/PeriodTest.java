package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link Period}: a user's visibility period folded from the conversation's join/leave events. */
class PeriodTest {
    private static Period fold(long[] seqs, String[] kinds) {
        Period p = null;
        for (int i = 0; i < seqs.length; i++) p = Period.after(p, seqs[i], kinds[i]);
        return p;
    }

    @Test
    void periodsFollowTheLogBothEndsIncluded() {
        Period p = Period.after(null, 2, "join");
        assertTrue(p.covers(2) && p.covers(1_000) && p.open());
        assertFalse(p.covers(1), "nothing before the join");
        p = Period.after(p, 4, "leave");
        assertTrue(p.covers(4), "the leaver sees its leave");
        assertFalse(p.covers(5));
        assertEquals(new Period(2, 4), p);
        p = Period.after(p, 6, "join");
        assertEquals(new Period(6, Period.OPEN), p, "a rejoin starts a new period");
        assertFalse(p.covers(3), "only the latest period counts");
    }

    @Test
    void theVisibleHeadIsTheHeadForAMemberAndTheLeaveForAFormerOne() {
        assertEquals(9, new Period(2, Period.OPEN).visibleHead(9));
        assertEquals(4, new Period(2, 4).visibleHead(9), "the leave is the last event a former member sees");
        assertEquals(3, new Period(2, 4).visibleHead(3), "never above the head");
    }

    @Test
    void joinedAndLeftAreTheFoldOfAJoinAndOfALeave() {
        assertEquals(new Period(3, Period.OPEN), Period.joined(null, 3));
        assertEquals(new Period(3, 3), Period.left(null, 3), "a leave without its join: the leave alone");
        Period p = Period.left(Period.joined(null, 3), 5);
        assertEquals(new Period(3, 5), p);
        assertSame(p, Period.joined(p, 4), "a join older than the leave changes nothing");
        assertSame(p, Period.left(p, 5));
    }

    @Test
    void otherKindsChangeNothing() {
        Period p = new Period(1, Period.OPEN);
        assertSame(p, Period.after(p, 5, "msg"));
        assertNull(Period.after(null, 5, "msg"));
    }

    @Test
    void aReplayedOrEarlierChangeNeverUndoesALaterOne() {
        Period left = fold(new long[] {1, 2}, new String[] {"join", "leave"});
        assertSame(left, Period.after(left, 1, "join"), "a replayed join does not reopen the period");
        assertSame(left, Period.after(left, 2, "leave"), "a replayed leave is a no-op");
        Period rejoined = Period.after(left, 7, "join");
        assertSame(rejoined, Period.after(rejoined, 2, "leave"), "an old leave does not end the new period");
    }

    /** Any replay of a prefix of the log, anywhere, folds to what the log alone folds to. */
    @Test
    void replaysInterleavedAnywhereFoldToTheSamePeriod() {
        Random random = new Random(7);
        for (int round = 0; round < 500; round++) {
            List<long[]> log = new ArrayList<>();   // {seq, 1 = join / 0 = leave}
            boolean member = false;
            for (long seq = 1; seq <= 12; seq++) {
                if (random.nextInt(3) == 0) continue;   // a message: no membership change
                member = !member;
                log.add(new long[] {seq, member ? 1 : 0});
            }
            Period expected = null;
            for (long[] e : log) expected = Period.after(expected, e[0], e[1] == 1 ? "join" : "leave");
            Period p = null;
            for (int i = 0; i < log.size(); i++) {
                p = Period.after(p, log.get(i)[0], log.get(i)[1] == 1 ? "join" : "leave");
                List<long[]> replay = new ArrayList<>(log.subList(0, i + 1));
                Collections.shuffle(replay, random);
                for (long[] e : replay.subList(0, random.nextInt(replay.size() + 1))) {
                    p = Period.after(p, e[0], e[1] == 1 ? "join" : "leave");
                }
            }
            assertEquals(expected, p, "round " + round);
        }
    }

    @Test
    void encodeRoundTripsAndGarbageIsABug() {
        for (Period p : List.of(new Period(3, Period.OPEN), new Period(3, 9), new Period(0, 0))) {
            assertEquals(p, Period.decode(p.encode()));
        }
        assertThrows(IllegalStateException.class, () -> Period.decode("x"));
    }
}
