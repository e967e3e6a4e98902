package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class AckThrottleTest {
    private static final long MS = 1_000_000L;

    @Test
    void theFirstAckOfAPairGoesAtOnceAndTheNextWaitsForTheRestOfTheInterval() {
        AckThrottle t = new AckThrottle(Duration.ofMillis(300));
        assertEquals(0, t.admit("d1|c1", 1_000 * MS));
        assertEquals(200 * MS, t.admit("d1|c1", 1_100 * MS));
        assertEquals(0, t.admit("d2|c1", 1_100 * MS), "another pair is not throttled by the first");
        assertEquals(0, t.admit("d1|c1", 1_300 * MS), "the interval has passed");
    }

    @Test
    void aReleasedPairWaitsAFullIntervalFromItsRelease() {
        AckThrottle t = new AckThrottle(Duration.ofMillis(300));
        t.admit("p", 0);
        t.admitted("p", 300 * MS);
        assertEquals(100 * MS, t.admit("p", 500 * MS));
    }

    @Test
    void zeroThrottlesNothingAndQuietPairsAreForgotten() {
        AckThrottle none = new AckThrottle(Duration.ZERO);
        assertEquals(0, none.admit("p", 0));
        assertEquals(0, none.admit("p", 1));
        AckThrottle t = new AckThrottle(Duration.ofMillis(10));
        for (int i = 0; i < 1000; i++) t.admit("p" + i, i);
        assertEquals(1000, t.tracked());
        t.admit("late", 100 * MS);
        assertEquals(1, t.tracked(), "pairs not seen for an interval are dropped");
    }
}
