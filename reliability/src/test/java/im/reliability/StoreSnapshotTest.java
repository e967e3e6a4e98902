package im.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ReceivedEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StoreSnapshotTest {

    /** A store that commits seq 17 (event and cursor together) at the moment between two reads. */
    private static final class StoreCommittingBetweenReads {
        final List<Long> events = new ArrayList<>(List.of(15L, 16L));
        long cursor = 16;
        int reads;

        private void maybeCommit() {
            if (++reads == 1) return;
            if (reads == 2) {
                events.add(17L);
                cursor = 17;
            }
        }

        long cursor(String conv) {
            maybeCommit();
            return cursor;
        }

        List<ReceivedEvent> events(String conv) {
            maybeCommit();
            return msgs(conv, events);
        }
    }

    private static List<ReceivedEvent> msgs(String conv, List<Long> seqs) {
        return seqs.stream().map(s -> new ReceivedEvent(conv, s, "msg", "m" + s, "u", "c" + s, "body " + s, 0)).toList();
    }

    @Test
    void aBatchCommittedBetweenTheTwoReadsNeverLooksLikeAGapBelowTheCursor() {
        StoreCommittingBetweenReads s = new StoreCommittingBetweenReads();
        StoreSnapshot snap = StoreSnapshot.read(List.of("g0"), s::cursor, s::events, e -> true);
        long cursor = snap.local().get("g0");
        List<Long> stored = snap.stored().get("g0");
        for (long seq = 15; seq <= cursor; seq++) {
            assertTrue(stored.contains(seq), "cursor " + cursor + " but seq " + seq + " not in " + stored);
        }
    }

    @Test
    void keepsOnlyTheCursorsItIsToldToAndLeavesEmptyStoresOut() {
        StoreSnapshot snap = StoreSnapshot.read(List.of("a", "b"), c -> c.equals("a") ? 3 : 0,
                c -> msgs(c, c.equals("a") ? List.of(1L, 2L, 3L) : List.of()), e -> e.getValue() > 0);
        assertEquals(Map.of("a", List.of(1L, 2L, 3L)), snap.stored());
        assertEquals(Map.of("a", 3L), snap.local());
        assertEquals(Map.of("a", Map.of(1L, "body 1", 2L, "body 2", 3L, "body 3")), snap.bodies());
    }
}
