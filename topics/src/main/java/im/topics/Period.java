package im.topics;

/**
 * A visibility period: a member sees the events with {@code from <= seq <= until} (the join and
 * the leave included; {@link #OPEN} while a member), and only those. This is the one statement of
 * the rule in Java: the delivery nodes and the sweeper fold each user's latest period from the
 * conversation's own {@code join} and {@code leave} events ({@code ConvLogStore}, never from
 * interest records, so a routing record that arrives late or out of order cannot widen anyone's
 * visibility), and the gateway keeps one per connection and conversation from the {@code sub}
 * snapshot and the join/leave notices. In PostgreSQL a period is a {@code memberships} row
 * ({@code from_seq}, {@code to_seq} NULL while open); the store's reader and cursor service decide
 * the same rule in SQL over all of a user's periods, and {@code PeriodSqlIT} (module {@code store})
 * checks them against this type.
 *
 * <p>{@link #after} is the one fold rule, and it is idempotent and order-tolerant: a change
 * applies only when its seq is later than the period's last change, so a replayed join or leave
 * (after a crash, a CDC duplicate, or a notice that raced a snapshot) can never reopen or shorten
 * a period that a later event decided. That is what lets a period live in its own store entry
 * beside the head: a crash that kept one write and lost the other is repaired by the replay.
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
     * The highest seq this period lets its user see in a conversation whose head is {@code head}:
     * the head while open, else the leave (never above the head). A device is behind when its
     * cursor is below it.
     */
    public long visibleHead(long head) {
        return open() ? head : Math.min(until, head);
    }

    /**
     * The period after the membership event {@code kind} at {@code seq} on top of {@code current}
     * (may be null), or {@code current} itself when the event changes nothing: a kind other than
     * join/leave, or a seq not later than the current period's last change.
     */
    public static Period after(Period current, long seq, String kind) {
        if ("join".equals(kind)) return joined(current, seq);
        if ("leave".equals(kind)) return left(current, seq);
        return current;
    }

    /** {@link #after} a join at {@code seq}: a new open period, unless a later change decided already. */
    public static Period joined(Period current, long seq) {
        if (current != null && seq <= current.lastChange()) return current;
        return new Period(seq, OPEN);
    }

    /** {@link #after} a leave at {@code seq}: the period ends there (the leave is its last visible event). */
    public static Period left(Period current, long seq) {
        if (current != null && seq <= current.lastChange()) return current;
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
