package im.sweeper;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the sweeper's tasks count for its meters (owned by the caller of
 * {@link SweeperTopology#build}, no static state): device hints emitted, repairs completed (a
 * hinted pair whose cursor then reached the head it may see), online pairs the ticks visited, and, as of each task's last sweep,
 * its lagging pairs by how long they have been lagging. A task's counts leave with the task when
 * it is closed (moved to another instance by a rebalance).
 */
public final class SweepStats {
    /** The ages at which lagging pairs are counted ({@code im.sweeper.lagging.over}, tag {@code over}). */
    public static final List<Duration> AGES = List.of(Duration.ofSeconds(10), Duration.ofSeconds(60), Duration.ofMinutes(10));

    final LongAdder hints;
    final LongAdder repairs = new LongAdder();
    final LongAdder visited = new LongAdder();
    private final Map<String, long[]> byTask = new ConcurrentHashMap<>();

    public SweepStats() {
        this(new LongAdder());
    }

    SweepStats(LongAdder hints) {
        this.hints = hints;
    }

    /** Device hints emitted (a hint to n devices counts n). */
    public long hints() {
        return hints.sum();
    }

    /** Hinted pairs whose cursor then reached the head they may see, while still online. */
    public long repairs() {
        return repairs.sum();
    }

    /** Online pairs the ticks looked at (each visit of a conversation whose due head moved counts its online pairs). */
    public long pairsVisited() {
        return visited.sum();
    }

    /** Lagging pairs, over the tasks of this instance, lagging for at least {@code AGES.get(i)} at their task's last sweep. */
    public long laggingOver(int i) {
        long n = 0;
        for (long[] counts : byTask.values()) n += counts[i];
        return n;
    }

    void swept(String task, long[] countsByAge) {
        byTask.put(task, countsByAge);
    }

    void closed(String task) {
        byTask.remove(task);
    }

    /** The {@code over} tag of an age: {@code 10s}, {@code 60s}, {@code 600s}. */
    static String tag(Duration age) {
        return age.toSeconds() + "s";
    }
}
