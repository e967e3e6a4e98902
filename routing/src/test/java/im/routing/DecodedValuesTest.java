package im.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link DecodedValues}: a decoded value is reused only while the store holds the same text. */
class DecodedValuesTest {
    private final AtomicInteger decodes = new AtomicInteger();
    private final DecodedValues<ConvLog> logs = new DecodedValues<>(2, t -> {
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
        int before = decodes.get();
        logs.get("c1", logText(1));
        assertEquals(before, decodes.get(), "c1 was used last, so c2 went");
        logs.get("c2", logText(1));
        assertEquals(before + 1, decodes.get());
    }

    @Test
    void capacityMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new DecodedValues<>(0, t -> t));
    }
}
