package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link Visibility}: both bounds of a connection's period, whatever order sub and notices arrive in. */
class VisibilityTest {
    @Test
    void bothBoundsAreChecked() {
        Visibility v = new Visibility();
        v.joined("c1", 3);
        assertFalse(v.visible("c1", 2), "nothing before the join");
        assertTrue(v.visible("c1", 3));
        v.left("c1", 7);
        assertTrue(v.visible("c1", 7), "the leave itself is visible");
        assertFalse(v.visible("c1", 8), "nothing after the leave");
        assertFalse(v.visible("c2", 1), "an unknown conversation is never visible");
    }

    @Test
    void aLeaveNoticeAppliedBeforeAStaleSubSnapshotWins() {
        Visibility v = new Visibility();
        v.left("c1", 9);        // the notice, handled while the sub read was in flight
        v.joined("c1", 4);      // the read's snapshot: member since 4 (taken before the leave committed)
        assertFalse(v.visible("c1", 10));
        assertEquals(Set.of(), v.memberConvs(), "not registered as a member");
        assertEquals(Set.of("c1"), v.allConvs());
    }

    @Test
    void aLaterRejoinReopensAndAnOlderJoinDoesNot() {
        Visibility v = new Visibility();
        v.joined("c1", 1);
        v.left("c1", 5);
        assertFalse(v.joined("c1", 3), "an older join changes nothing");
        assertFalse(v.visible("c1", 6));
        assertTrue(v.joined("c1", 6));
        assertTrue(v.visible("c1", 6));
        assertFalse(v.visible("c1", 5), "the gap between the periods stays invisible");
        assertEquals(Set.of("c1"), v.memberConvs());
    }
}
