package im.store.send;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * The one home of the rule and the SQL that move a conversation's head ({@code conversations.head_seq},
 * the last seq allocated): every seq of the log, for messages ({@link SendService},
 * {@link SendBatch}) and membership events ({@code Directory}, {@code Onboarding}) alike, is
 * allocated here, and nothing else writes the head. The next seq is the head plus one; the
 * allocation holds the conversation's row lock until commit, so seqs commit in order, and one that
 * rolls back returns its seqs (no gaps). The caller inserts its events at the seqs it was given,
 * in the same transaction. The rule has two forms: in SQL for a transaction that allocates as it
 * goes ({@link #NEXT_SEQ}, {@link #allocate}), in Java for the group-commit batch, which reads its
 * conversations' heads under lock, allocates with {@link Heads} and moves the heads with
 * {@link #MOVE_HEADS} in the statement that inserts its events ({@link SendSql#BATCH_INSERT}: one
 * round trip). {@code ConversationLogIT} checks that the two forms allocate alike. Also the event id.
 *
 * <p>Every event also carries two running counts of the log (migration V9), written by the
 * statement that inserts it with the SQL of {@link #msgNo} and {@link #ownNo}: {@code msg_no}, the
 * conversation's messages up to it, and, on a message, {@code own_no}, its sender's messages up to
 * it. Unread counts are differences of them ({@code unread_between}); {@code ReadCursorsIT} checks
 * them against a count over the log.
 */
public final class ConversationLog {
    private ConversationLog() {}

    /** Allocates the next seq; the row lock it takes serialises the conversation's writers. Parameter: conv. */
    public static final String NEXT_SEQ =
            "UPDATE conversations SET head_seq = head_seq + 1 WHERE conv_id = ? RETURNING head_seq";

    /** Allocates {@code n} consecutive seqs and returns the last. Parameters: n, conv. */
    static final String ALLOCATE =
            "UPDATE conversations SET head_seq = head_seq + ? WHERE conv_id = ? RETURNING head_seq";

    /**
     * Sets the heads of conversations the transaction has locked to what {@link Heads} allocated
     * (a data-modifying statement, for a {@code WITH} of the statement that inserts the events).
     * Parameters: conv ids, new heads, the same conv ids again (text[], bigint[], text[]: the ANY
     * gives the generic plan an index condition).
     */
    static final String MOVE_HEADS =
            "UPDATE conversations c SET head_seq = h.head"
            + "     FROM unnest(?::text[], ?::bigint[]) AS h(conv, head)"
            + "     WHERE c.conv_id = ANY (?::text[]) AND c.conv_id = h.conv";

    /**
     * SQL for the {@code msg_no} of an event at {@code seq} in {@code conv}, the events from
     * {@code first} to it being inserted by the same statement or transaction, all messages
     * ({@code messages}) or all membership events: the msg_no of the event before {@code first}
     * (already in the log), plus the messages from {@code first} to this one. The arguments are SQL
     * expressions (a parameter, a column).
     */
    public static String msgNo(String conv, String first, String seq, boolean messages) {
        String before = "COALESCE((SELECT p.msg_no FROM events p WHERE p.conv_id = " + conv + " AND p.seq = " + first + " - 1), 0)";
        return messages ? before + " + (" + seq + " - " + first + " + 1)" : before;
    }

    /**
     * SQL for the {@code own_no} of a message of {@code sender} in {@code conv} that is the
     * {@code nth} of the sender's in the inserting statement: the sender's last message already in
     * the log (index {@code events_own}), plus {@code nth}.
     */
    public static String ownNo(String conv, String sender, String nth) {
        return "COALESCE((SELECT o.own_no FROM events o WHERE o.conv_id = " + conv + " AND o.sender = " + sender
                + " AND o.kind = 'msg' ORDER BY o.seq DESC LIMIT 1), 0) + " + nth;
    }

    /**
     * Allocates the conversation's next seq with {@link #NEXT_SEQ} inside the caller's transaction.
     *
     * @return the seq, or empty when there is no such conversation
     */
    public static OptionalLong nextSeq(Connection c, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(NEXT_SEQ)) {
            ps.setString(1, conv);
            return single(ps);
        }
    }

    /**
     * Allocates {@code n} consecutive seqs at once (a bulk of membership events), as {@link #nextSeq}
     * does one: the conversation's row lock is held until commit.
     *
     * @return the last of them (the new head), or empty when there is no such conversation
     */
    public static OptionalLong allocate(Connection c, String conv, int n) throws SQLException {
        if (n < 1) throw new IllegalArgumentException("n must be at least 1, got " + n);
        try (PreparedStatement ps = c.prepareStatement(ALLOCATE)) {
            ps.setInt(1, n);
            ps.setString(2, conv);
            return single(ps);
        }
    }

    /** The conversation's head (its last seq; 0 before any event), or empty when there is no such conversation. */
    public static OptionalLong head(Connection c, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT head_seq FROM conversations WHERE conv_id = ?")) {
            ps.setString(1, conv);
            return single(ps);
        }
    }

    private static OptionalLong single(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
        }
    }

    /** A new event id (mid): a UUID v7, time-ordered so new events sit together in the mid index. */
    public static String newEventId(Clock clock) {
        return Uuid7.next(clock).toString();
    }

    /**
     * The heads of conversations the caller's transaction has locked, allocated from in Java, as
     * {@link #NEXT_SEQ} does in SQL: each {@link #next} is the head plus one and becomes the head.
     * {@link #bindMove} binds {@link #MOVE_HEADS} with the heads that moved.
     */
    static final class Heads {
        private final Map<String, Long> heads = new TreeMap<>();
        private final Map<String, Long> moved = new TreeMap<>();

        /** A conversation locked with this head. */
        void locked(String conv, long head) {
            heads.put(conv, head);
        }

        /** Whether {@code conv} was locked (it exists). */
        boolean has(String conv) {
            return heads.containsKey(conv);
        }

        /** Allocates the next seq of a locked conversation. */
        long next(String conv) {
            Long head = heads.get(conv);
            if (head == null) throw new IllegalStateException("conversation " + conv + " is not locked");
            long seq = head + 1;
            heads.put(conv, seq);
            moved.put(conv, seq);
            return seq;
        }

        /** Binds {@link #MOVE_HEADS}'s three parameters from {@code first} on: the heads {@link #next} moved. */
        void bindMove(Connection c, PreparedStatement ps, int first) throws SQLException {
            String[] convs = moved.keySet().toArray(String[]::new);
            ps.setArray(first, c.createArrayOf("text", convs));
            ps.setArray(first + 1, c.createArrayOf("int8", moved.values().toArray(Long[]::new)));
            ps.setArray(first + 2, c.createArrayOf("text", convs));
        }
    }
}
