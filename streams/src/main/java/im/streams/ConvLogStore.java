package im.streams;

import im.topics.EventRecord;
import im.topics.PairKey;
import im.topics.Period;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * What a conversation's own log says about it, as the delivery nodes and the sweeper keep it in
 * two task-local stores with changelogs, one entry per thing that changes:
 * <ul>
 *   <li>{@value #HEADS}: conv → the highest seq applied (CDC duplicates and replays are
 *       recognised by it);</li>
 *   <li>{@value #PERIODS}: {@link PairKey}(conv, user) → that user's latest {@link Period}.</li>
 * </ul>
 * An event costs one head write and, for a join or leave, one period write per user it adds or
 * removes (one, or each user of a bulk join), whatever the size of the conversation; "may user u
 * see seq s" is one lookup. (Before, head and every member's period were one JSON value rewritten
 * and re-read whole, so each event and each cursor record in a group of thousands cost thousands.)
 *
 * <p>A period is written before the head, and {@link Period#after} ignores a change it already
 * holds, so a membership event at or below the head is still applied: after a crash that kept the
 * head's write and lost the period's, the replayed event restores the period.
 */
public final class ConvLogStore {
    public static final String HEADS = "conv-heads";
    public static final String PERIODS = "conv-periods";

    private final KeyValueStore<String, Long> heads;
    private final KeyValueStore<String, String> periods;

    public ConvLogStore(KeyValueStore<String, Long> heads, KeyValueStore<String, String> periods) {
        this.heads = heads;
        this.periods = periods;
    }

    /** The two stores of a processor that {@link #addStores} connected to it. */
    public static ConvLogStore of(ProcessorContext<?, ?> context) {
        return new ConvLogStore(context.getStateStore(HEADS), context.getStateStore(PERIODS));
    }

    /** Adds both stores (persistent, logged) and connects them to {@code processors}. */
    public static void addStores(Topology t, String... processors) {
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(HEADS), Serdes.String(), Serdes.Long()), processors);
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(PERIODS), Serdes.String(), Serdes.String()), processors);
    }

    /**
     * Applies one event of the log as the event topic carries it: the period of every user a join
     * or leave adds or removes (one for a single change, each of {@code users} for a bulk join:
     * one period write per added user), even at or below the head (see above), then the head.
     * Returns whether the event is new (seq above the head). A replayed bulk join changes nothing
     * that a later event of one of its users decided ({@link Period#after}).
     *
     * @throws IllegalArgumentException for a bulk join without its list (a compact one): its
     *         periods cannot be learnt from it
     */
    public boolean apply(EventRecord ev) {
        if (ev.isMembership()) {
            if (ev.isBulk() && ev.users() == null) {
                throw new IllegalArgumentException("bulk join at " + ev.conv() + " seq " + ev.seq() + " without its users");
            }
            for (String user : ev.members()) applyPeriod(ev.conv(), user, ev.seq(), ev.kind());
        }
        if (ev.seq() <= head(ev.conv())) return false;
        heads.put(ev.conv(), ev.seq());
        return true;
    }

    private void applyPeriod(String conv, String user, long seq, String kind) {
        Period now = period(conv, user);
        Period next = Period.after(now, seq, kind);
        if (next != now) periods.put(PairKey.of(conv, user), next.encode());
    }

    /** The highest seq applied; 0 for a conversation never seen. */
    public long head(String conv) {
        Long h = heads.get(conv);
        return h == null ? 0 : h;
    }

    /** The user's latest period, or null if the log never made them a member. */
    public Period period(String conv, String user) {
        String p = periods.get(PairKey.of(conv, user));
        return p == null ? null : Period.decode(p);
    }

    /** Whether the user may see this seq (per the latest period the log has shown so far). */
    public boolean visible(String conv, String user, long seq) {
        Period p = period(conv, user);
        return p != null && p.covers(seq);
    }

    /**
     * The highest seq this user may see: the head for a member, the leave's seq for a former
     * member, 0 for someone who never was one. A device is behind when its cursor is below it.
     */
    public long visibleHead(String conv, String user) {
        Period p = period(conv, user);
        if (p == null) return 0;
        return p.visibleHead(head(conv));
    }
}
