package im.reliability;

/** One broken promise found in a history. */
public record Violation(Kind kind, String detail) {
    /** The kinds the checker looks for. */
    public enum Kind {
        /** A send that got {@code sent{seq}} is not in PostgreSQL with that seq, cmid, body and sender (D1, D6). */
        LOST_WRITE,
        /** The {@code sent} replies of one cmid disagree on the seq, or more than one said {@code dup:false} (D2). */
        DUPLICATE_WRITE,
        /** A committed message belongs to no recorded send (unknown cmid, or another conversation or body). */
        PHANTOM_WRITE,
        /** A conversation's seqs are not exactly 1..head. */
        SEQ_GAP,
        /** A committed event never appeared on the event topic. */
        NOT_ON_TOPIC,
        /**
         * The log's join/leave events do not form periods (a join of a member, a leave of a non-member),
         * they differ from the memberships table, or a membership change the admin API confirmed is not in the log.
         */
        MEMBERSHIP_MISMATCH,
        /** A device lacks a visible event at or below its local cursor, or (online) below the head. */
        STORE_MISSING,
        /** The SDK reported one event stored for the first time twice in one install. */
        STORE_DUPLICATE,
        /** A device stored an event outside its user's visibility periods. */
        STORE_INVISIBLE,
        /** A device was pushed or synced an event outside its user's visibility periods. */
        FRAME_INVISIBLE,
        /** An event a device received or stored differs from the committed one (or no such seq was committed). */
        CONTENT_MISMATCH,
        /** An install kept receiving events longer than the revocation bound after it was reinstalled. */
        STALE_INSTALL_READ,
        /** An online device's cursor (local or server) did not reach the last visible seq of a conversation it is in. */
        NOT_CONVERGED,
        /** A cursor the server reported to an install went backwards. */
        CURSOR_REGRESSED,
        /** A cursor is above the conversation head or a reported one above the head visible to the user (D4). */
        CURSOR_ABOVE_HEAD,
        /** A device's outbox is not empty at the end. */
        OUTBOX_NOT_EMPTY,
        /** A read state a device was told ({@code readack}, {@code unread} push, {@code subbed} entry) has a negative unread count. */
        UNREAD_NEGATIVE,
        /**
         * A read state a device was told has a read cursor or head above the last seq visible to the user
         * in that conversation, or a read cursor above its own head.
         */
        READ_ABOVE_HEAD,
        /**
         * A reported read cursor is above the user's read cursor at the end (so the cursor went down),
         * or one install's {@code readack}s of a conversation decreased.
         */
        READ_REGRESSED,
        /**
         * An unread count differs from the log's: a read state's unread is not the number of visible
         * messages of others in (read, head], or at the end an online install's SDK unread is not the
         * number above the user's final read cursor (and so its user's devices may disagree).
         */
        UNREAD_DISAGREES,
        /**
         * A recalled message's or edit's body was served or kept after the recall: a {@code synced} or
         * {@code caughtup} page answering a request sent after the recaller received the recall's
         * {@code sent} carries it, the events row still holds it, or a store holds it next to the recall
         * (or with its cursor past the recall).
         */
        RECALLED_BODY_SERVED,
        /** At the end, an online install's SDK local query shows the text of a message whose recall it holds. */
        RECALL_NOT_APPLIED,
        /** At the end, an online install's SDK local query shows a message's text other than its latest edit visible to the user. */
        EDIT_NOT_APPLIED
    }
}
