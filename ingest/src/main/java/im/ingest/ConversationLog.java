package im.ingest;

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

    /** A new event id (mid): a UUID v7, time-ordered so new events sit together in the mid index. */
    public static String newEventId(Clock clock) {
        return Uuid7.next(clock).toString();
    }
}
