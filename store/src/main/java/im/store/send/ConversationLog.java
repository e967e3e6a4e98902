package im.store.send;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.OptionalLong;

/**
 * The one place a conversation's log grows, for messages ({@link SendService}) and membership
 * events ({@code Directory}) alike: the next seq and the event id.
 */
public final class ConversationLog {
    private ConversationLog() {}

    /**
     * Allocates the conversation's next seq with {@link SendSql#NEXT_SEQ} inside the caller's
     * transaction. The row lock it takes is held until commit, so seqs commit in order without gaps.
     *
     * @return the seq, or empty when there is no such conversation
     */
    public static OptionalLong nextSeq(Connection c, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(SendSql.NEXT_SEQ)) {
            ps.setString(1, conv);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
            }
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
        try (PreparedStatement ps = c.prepareStatement("UPDATE conversations SET head_seq = head_seq + ? WHERE conv_id = ? RETURNING head_seq")) {
            ps.setInt(1, n);
            ps.setString(2, conv);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
            }
        }
    }

    /** The conversation's head (its last seq; 0 before any event), or empty when there is no such conversation. */
    public static OptionalLong head(Connection c, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT head_seq FROM conversations WHERE conv_id = ?")) {
            ps.setString(1, conv);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
            }
        }
    }

    /** A new event id (mid): a UUID v7, time-ordered so new events sit together in the mid index. */
    public static String newEventId(Clock clock) {
        return Uuid7.next(clock).toString();
    }
}
