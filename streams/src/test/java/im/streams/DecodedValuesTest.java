package im.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.topics.Period;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link DecodedValues}: a decoded value is reused only while the store holds the same text; the cache is bounded by text length. */
class DecodedValuesTest {
    /** A decoded value: a period, as the router keeps them. */
    private final AtomicInteger decodes = new AtomicInteger();
    /** Room for two values (all the texts below are as long as {@code text(1)}). */
    private final DecodedValues<Period> periods = new DecodedValues<>(2L * text(1).length(), t -> {
        decodes.incrementAndGet();
        return Period.decode(t);
    });

    private static String text(long from) {
        return new Period(from, 9).encode();
    }

    @Test
    void theSameTextIsDecodedOnceAndOtherTextAgain() {
        Period a = periods.get("c1", text(1));
        assertSame(a, periods.get("c1", new String(text(1))), "an equal text, not the same String, hits");
        assertEquals(1, decodes.get());
        Period b = periods.get("c1", text(2));
        assertNotSame(a, b, "the store changed under the cache (restore, another writer): decoded anew");
        assertEquals(2, b.from());
        assertEquals(2, decodes.get());
    }

    @Test
    void nullTextIsNullAndForgetsTheKey() {
        periods.get("c1", text(1));
        assertNull(periods.get("c1", null));
        assertEquals(0, periods.size());
    }

    @Test
    void theLeastRecentlyUsedKeyLeavesFirst() {
        periods.get("c1", text(1));
        periods.get("c2", text(1));
        periods.get("c1", text(1));
        periods.get("c3", text(1));
        assertEquals(2, periods.size());
        assertEquals(2L * text(1).length(), periods.chars());
        int before = decodes.get();
        periods.get("c1", text(1));
        assertEquals(before, decodes.get(), "c1 was used last, so c2 went");
        periods.get("c2", text(1));
        assertEquals(before + 1, decodes.get());
    }

    @Test
    void aTextLongerThanTheWholeBudgetIsDecodedButNotKept() {
        periods.get("c1", text(1));
        String big = new Period(1_000_000, 9_000_000).encode();
        assertEquals(1_000_000, periods.get("c2", big).from());
        assertEquals(1_000_000, periods.get("c2", big).from());
        assertEquals(3, decodes.get(), "decoded each time: it does not fit");
        assertEquals(1, periods.size(), "and it did not push c1 out");
    }

    @Test
    void capacityMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new DecodedValues<>(0, t -> t));
    }
}
