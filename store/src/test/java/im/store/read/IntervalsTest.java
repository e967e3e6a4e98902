package im.store.read;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The receipts' interval counts against counting by hand. */
class IntervalsTest {
    @Test
    void countsTheIntervalsThatContainASeqAsCountingEachWould() {
        Random random = new Random(7);
        for (int round = 0; round < 50; round++) {
            MessageReceipts.Intervals in = new MessageReceipts.Intervals();
            List<long[]> all = new ArrayList<>();
            int n = random.nextInt(40);
            for (int i = 0; i < n; i++) {
                long a = random.nextInt(30);
                long b = random.nextInt(5) == 0 ? Long.MAX_VALUE : a - 3 + random.nextInt(20);   // some empty, some open
                in.add(a, b);
                all.add(new long[] {a, b});
            }
            for (long s = 0; s < 40; s++) {
                long seq = s;
                long expected = all.stream().filter(x -> x[0] <= seq && seq <= x[1]).count();
                assertEquals(expected, in.containing(seq), "round " + round + " seq " + seq);
            }
        }
    }
}
