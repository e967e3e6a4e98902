package im.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link DecodedValues}: a decoded value is reused only while the store holds the same text; the cache is bounded by text length. */
class DecodedValuesTest {
    private final AtomicInteger decodes = new AtomicInteger();
    /** Room for two logs of one member (all the texts below are as long as {@code logText(1)}). */
    private final DecodedValues<ConvLog> logs = new DecodedValues<>(2L * logText(1).length(), t -> {
        decodes.incrementAndGet();
        return ConvLog.fromJson(t);
    });

    private static String logText(long head) {
        ConvLog l = ConvLog.empty();
        l.apply(head, "join", "u1");
        return l.toJson();
    }

    @Test
    void theSameTextIsDecodedOnceAndOtherTextAgain() {
        ConvLog a = logs.get("c1", logText(1));
        assertSame(a, logs.get("c1", new String(logText(1))), "an equal text, not the same String, hits");
        assertEquals(1, decodes.get());
        ConvLog b = logs.get("c1", logText(2));
        assertNotSame(a, b, "the store changed under the cache (restore, another writer): decoded anew");
        assertEquals(2, b.head());
        assertEquals(2, decodes.get());
    }

    @Test
    void nullTextIsNullAndForgetsTheKey() {
        logs.get("c1", logText(1));
        assertNull(logs.get("c1", null));
        assertEquals(0, logs.size());
        assertNull(logs.take("c1", null));
    }

    @Test
    void aTakenValueIsNotServedUntilPutBackWithItsNewText() {
        String before = logText(1);
        ConvLog l = logs.take("c1", before);
        l.apply(5, "msg", "u1");
        // the write of the new text failed: the next reader still finds the old text in the store
        ConvLog again = logs.take("c1", before);
        assertNotSame(l, again, "a changed value whose new text was never stored must not come back");
        assertEquals(1, again.head());
        again.apply(5, "msg", "u1");
        logs.put("c1", again.toJson(), again);
        assertSame(again, logs.get("c1", again.toJson()));
    }

    @Test
    void theLeastRecentlyUsedKeyLeavesFirst() {
        logs.get("c1", logText(1));
        logs.get("c2", logText(1));
        logs.get("c1", logText(1));
        logs.get("c3", logText(1));
        assertEquals(2, logs.size());
        assertEquals(2L * logText(1).length(), logs.chars());
        int before = decodes.get();
        logs.get("c1", logText(1));
        assertEquals(before, decodes.get(), "c1 was used last, so c2 went");
        logs.get("c2", logText(1));
        assertEquals(before + 1, decodes.get());
    }

    @Test
    void aTextLongerThanTheWholeBudgetIsDecodedButNotKept() {
        logs.get("c1", logText(1));
        ConvLog big = ConvLog.empty();
        for (int u = 1; u <= 20; u++) big.apply(u, "join", "user-" + u);
        String text = big.toJson();
        assertEquals(20, logs.get("c2", text).head());
        assertEquals(20, logs.get("c2", text).head());
        assertEquals(3, decodes.get(), "decoded each time: it does not fit");
        assertEquals(1, logs.size(), "and it did not push c1 out");
        logs.put("c1", text, big);
        assertEquals(0, logs.size(), "a put of a text that does not fit forgets the key's old value");
        assertEquals(0, logs.chars());
    }

    @Test
    void capacityMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new DecodedValues<>(0, t -> t));
    }
}
