package im.streams;

/**
 * A user's latest visibility period in a conversation, folded from the conversation's own
 * {@code join} and {@code leave} events: seqs {@code from..until}, both included ({@link #OPEN}
 * while the user is a member). The delivery nodes and the sweeper decide "may this user see seq s"
 * from this, never from interest records, so a routing record that arrives late or out of order
 * cannot widen anyone's visibility. Only the latest period per user matters for what is routed or
 * hinted next.
 *
 * <p>{@link #after} is the one fold rule, and it is idempotent and order-tolerant: a change
 * applies only when its seq is later than the period's last change, so a replayed join or leave
 * (after a crash, or a CDC duplicate) can never reopen or shorten a period that a later event
 * decided. That is what lets a period live in its own store entry beside the head: a crash that
 * kept one write and lost the other is repaired by the replay.
 */
public record Period(long from, long until) {
    /** Marks a period that has not ended. */
    public static final long OPEN = Long.MAX_VALUE;

    public boolean covers(long seq) {
        return from <= seq && seq <= until;
    }

    public boolean open() {
        return until == OPEN;
    }

    /** The seq of the event that made this period what it is: the join, or the leave. */
    public long lastChange() {
        return open() ? from : until;
    }

    /**
     * The period after the membership event {@code kind} at {@code seq} on top of {@code current}
     * (may be null), or {@code current} itself when the event changes nothing: a kind other than
     * join/leave, or a seq not later than the current period's last change.
     */
    public static Period after(Period current, long seq, String kind) {
        boolean join = "join".equals(kind);
        if (!join && !"leave".equals(kind)) return current;
        if (current != null && seq <= current.lastChange()) return current;
        if (join) return new Period(seq, OPEN);
        return new Period(current == null ? seq : current.from(), seq);
    }

    /** Compact stored form: {@code "from"} or {@code "from-until"}. */
    public String encode() {
        return open() ? Long.toString(from) : from + "-" + until;
    }

    /** Reads {@link #encode}'s form; a stored value only this class writes, so anything else is a bug. */
    public static Period decode(String s) {
        try {
            int dash = s.indexOf('-');
            if (dash < 0) return new Period(Long.parseLong(s), OPEN);
            return new Period(Long.parseLong(s, 0, dash, 10), Long.parseLong(s, dash + 1, s.length(), 10));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("routing state: not a period: '" + s + "'", e);
        }
    }
}
