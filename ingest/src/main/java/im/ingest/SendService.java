package im.ingest;

import im.protocol.ErrorCode;
import im.infra.db.DatabaseUnavailableException;
import im.infra.db.Transactions;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import javax.sql.DataSource;

/**
 * The write path of a message: one PostgreSQL transaction per send that deduplicates by
 * (sender, cmid), allocates the conversation's next seq without gaps, inserts the event and
 * commits. The result is returned only after COMMIT succeeded (D1); a resend of a committed cmid
 * returns the original seq with {@code dup=true} and writes nothing (D2). A transaction that does
 * not commit consumes no seq, because the seq allocation rolls back with it.
 */
public final class SendService {
    private static final String UNIQUE_VIOLATION = "23505";

    private final DataSource db;
    private final Faults faults;
    private final Clock clock;

    public SendService(DataSource db, Faults faults, Clock clock) {
        this.db = db;
        this.faults = faults;
        this.clock = clock;
    }

    /**
     * Sends one message. Inputs are assumed syntactically valid (the protocol codec checks ids
     * and sizes). Throws {@link SendRejectedException} for refusals (nothing written) and
     * {@link DatabaseUnavailableException} when PostgreSQL cannot be reached (outcome unknown:
     * resend with the same cmid).
     */
    public SendResult send(DevicePrincipal who, String conv, String cmid, String body) {
        try {
            return attempt(who, conv, cmid, body);
        } catch (CmidRace race) {
            // A concurrent send with the same cmid committed first; the retry finds it as a dup.
            return attempt(who, conv, cmid, body);
        }
    }

    private SendResult attempt(DevicePrincipal who, String conv, String cmid, String body) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                SendResult r = inTransaction(c, who, conv, cmid, body);
                if (r.dup()) {
                    c.rollback();   // read only
                } else {
                    faults.maybeHalt(FaultPoint.SEND_BEFORE_COMMIT);
                    c.commit();
                }
                return r;
            } catch (SQLException | RuntimeException e) {
                Transactions.rollbackQuietly(c, e);
                throw e;
            }
        } catch (SQLException e) {
            if (UNIQUE_VIOLATION.equals(e.getSQLState()) && String.valueOf(e.getMessage()).contains("events_sender_cmid")) {
                throw new CmidRace();
            }
            throw DatabaseUnavailableException.classify("send", e);
        }
    }

    private SendResult inTransaction(Connection c, DevicePrincipal who, String conv, String cmid, String body)
            throws SQLException {
        String user;
        boolean convExists;
        boolean member;
        try (PreparedStatement ps = c.prepareStatement(SendSql.PRECHECK)) {
            ps.setString(1, conv);
            ps.setString(2, conv);
            ps.setString(3, cmid);
            ps.setString(4, who.deviceId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getInt(1) != who.installEpoch()) {
                    throw new SendRejectedException(ErrorCode.STALE_INSTALL,
                            "device " + who.deviceId() + " was reinstalled; this install may not send");
                }
                user = rs.getString(2);
                convExists = rs.getBoolean(3);
                member = rs.getBoolean(4);
                String dupConv = rs.getString(5);
                if (dupConv != null) {
                    if (!dupConv.equals(conv) || !rs.getString(8).equals(body)) {
                        throw new SendRejectedException(ErrorCode.CMID_CONFLICT,
                                "cmid " + cmid + " was already used for a different message");
                    }
                    return new SendResult(conv, rs.getLong(6), rs.getString(7), true, who.installEpoch(),
                            rs.getTimestamp(9).toInstant());
                }
            }
        }
        if (!convExists) {
            throw new SendRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv);
        }
        if (!member) {
            throw new SendRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
        }
        long seq = ConversationLog.nextSeq(c, conv).orElseThrow(
                () -> new SendRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv));
        faults.maybeHalt(FaultPoint.SEND_BEFORE_INSERT);
        faults.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        String mid = ConversationLog.newEventId(clock);
        try (PreparedStatement ps = c.prepareStatement(SendSql.INSERT_MSG)) {
            ps.setString(1, conv);
            ps.setLong(2, seq);
            ps.setString(3, mid);
            ps.setString(4, user);
            ps.setString(5, who.deviceId());
            ps.setString(6, cmid);
            ps.setString(7, body);
            ps.setString(8, conv);
            ps.setString(9, user);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SendRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
                }
                return new SendResult(conv, seq, mid, false, who.installEpoch(), rs.getTimestamp(1).toInstant());
            }
        }
    }

    /** Internal signal: the (sender, cmid) unique key was taken by a concurrent transaction. */
    private static final class CmidRace extends RuntimeException {
        CmidRace() {
            super(null, null, false, false);
        }
    }
}
