package im.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link ConvLog}: visibility periods folded from the conversation's join/leave events. */
class ConvLogTest {
    @Test
    void periodsFollowTheLogBothEndsIncluded() {
        ConvLog l = ConvLog.empty();
        assertTrue(l.apply(1, "join", "u1"));
        assertTrue(l.apply(2, "join", "u2"));
        assertTrue(l.apply(3, "msg", "u1"));
        assertTrue(l.apply(4, "leave", "u2"));
        assertTrue(l.apply(5, "msg", "u1"));
        assertTrue(l.visible("u2", 2));
        assertTrue(l.visible("u2", 4), "the leaver sees its leave");
        assertFalse(l.visible("u2", 5));
        assertFalse(l.visible("u2", 1), "nothing before the join");
        assertFalse(l.visible("u9", 3), "never a member");
        assertEquals(5, l.visibleHead("u1"));
        assertEquals(4, l.visibleHead("u2"));
        assertEquals(0, l.visibleHead("u9"));
        assertFalse(l.member("u2"));
        assertTrue(l.apply(6, "join", "u2"));
        assertTrue(l.visible("u2", 6));
        assertTrue(l.member("u2"));
    }

    @Test
    void aSeqAtOrBelowTheHeadChangesNothing() {
        ConvLog l = ConvLog.empty();
        l.apply(1, "join", "u1");
        l.apply(2, "leave", "u1");
        assertFalse(l.apply(1, "join", "u1"), "a replayed join does not reopen the period");
        assertFalse(l.visible("u1", 3));
        assertEquals(2, l.head());
    }

    @Test
    void jsonRoundTrip() {
        ConvLog l = ConvLog.empty();
        l.apply(1, "join", "u1");
        l.apply(2, "join", "u2");
        l.apply(3, "leave", "u1");
        ConvLog back = ConvLog.fromJson(l.toJson());
        assertEquals(l.toJson(), back.toJson());
        assertEquals(3, back.head());
        assertTrue(back.visible("u1", 3));
        assertFalse(back.visible("u1", 4));
        assertTrue(back.member("u2"));
    }
}
