package im.reliability;

/** One broken promise found in a history. */
public record Violation(Kind kind, String detail) {
    /** The kinds the checker looks for. */
    public enum Kind {
        /** A send that got {@code sent{seq}} is not in PostgreSQL with that seq (D1, D6). */
        LOST_WRITE,
        /** A cmid of one sender is in PostgreSQL more than once, or a send ended PENDING but is stored (reported as info only if stored once). */
        DUPLICATE_WRITE,
        /** A conversation's seqs are not exactly 1..head. */
        SEQ_GAP,
        /** A committed event never appeared on the event topic. */
        NOT_ON_TOPIC,
        /** A device lacks a visible event at or below its local cursor, or (online) below the head. */
        STORE_MISSING,
        /** A device stored an event twice or out of order. */
        STORE_DUPLICATE,
        /** A device stored an event outside its user's visibility periods. */
        STORE_INVISIBLE,
        /** An online device's cursor (local or server) did not reach the last visible seq of a conversation it is in. */
        NOT_CONVERGED,
        /** A cursor the server reported to a device went backwards. */
        CURSOR_REGRESSED,
        /** A cursor is above the conversation head (D4). */
        CURSOR_ABOVE_HEAD,
        /** A device's outbox is not empty at the end. */
        OUTBOX_NOT_EMPTY
    }
}
