package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CursorTest {
    private final Cursor stored = new Cursor(2, 5);

    @Test
    void theSameEpochKeepsTheLargerDeliveredSeq() {
        assertEquals(new Cursor(2, 7), stored.merge(2, 7));
        assertEquals(stored, stored.merge(2, 3));
        assertEquals(stored, stored.merge(2, 5));
    }

    @Test
    void aHigherEpochStartsOverEvenBelowTheStoredSeq() {
        assertEquals(new Cursor(3, 1), stored.merge(3, 1));
        assertEquals(new Cursor(3, 0), stored.merge(3, 0));
    }

    @Test
    void aLowerEpochIsStaleWhateverItsSeq() {
        assertEquals(stored, stored.merge(1, 9));
        assertEquals(stored, stored.merge(1, 2));
    }
}
