package im.store.send;

import im.infra.db.DatabaseUnavailableException;
import im.infra.db.Transactions;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.Event;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The write path of an edit and of a recall: each is an event of the conversation's log (kinds
 * {@code edit} and {@code recall}) that refers to the message it changes by its seq, appended by
 * the message's sender, under the rules and with the idempotency of a send. One transaction: the
 * send's pre-check and rules ({@link SendSql#PRECHECK}, {@link SendRules}: install, credential,
 * an earlier event of the cmid, the conversation, membership), the next seq (which takes the
 * conversation's lock, so every change of its log is serialised), the target's rules under that
 * lock ({@link #TARGET}), the insert, and for a recall the emptying of the message's and its edits'
 * bodies; answered only after COMMIT, like a send (D1). Recalling a message that is already recalled
 * answers the first recall as a dup and writes nothing. Edits and recalls are rare next to sends,
 * so they take a transaction each rather than the send lanes' group commit.
 */
public final class MessageChanges {
    /**
     * The message a change refers to, read under the conversation's lock: its kind, sender and time,
     * the seq, mid and time of the recall that took it back (NULLs if none), and whether the sender
     * is still a member. Parameters: conv, conv, seq.
     */
    static final String TARGET =
            "SELECT t.kind, t.sender, t.created_at, r.seq, r.mid, r.created_at,"
            + " EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = t.conv_id AND m.user_id = t.sender AND m.to_seq IS NULL)"
            + " FROM events t LEFT JOIN events r ON r.conv_id = ? AND r.seq = t.recalled_by"
            + " WHERE t.conv_id = ? AND t.seq = ?";

    /**
     * Appends the edit or recall at the seq just allocated; it counts as no message ({@code msg_no}
     * carried over, no {@code own_no}). Parameters: conv, seq, kind, mid, sender, device, cmid, body, ref.
     */
    static final String INSERT_CHANGE =
            "INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body, ref_seq, msg_no)"
            + " SELECT r.conv, r.seq, r.kind, r.mid, r.sender, r.dev, r.cmid, r.body, r.ref,"
            + " " + ConversationLog.msgNo("r.conv", "r.seq", "r.seq", false)
            + " FROM (SELECT ?::text, ?::bigint, ?::text, ?::uuid, ?::text, ?::text, ?::text, ?::text, ?::bigint)"
            + "   AS r(conv, seq, kind, mid, sender, dev, cmid, body, ref)"
            + " RETURNING created_at";

    /**
     * A recall's other half: the message and its edits lose their bodies and name the recall.
     * Parameters: the recall's seq, conv, the message's seq (twice).
     */
    static final String EMPTY_RECALLED =
            "UPDATE events SET body = '', recalled_by = ? WHERE conv_id = ? AND (seq = ? OR (ref_seq = ? AND kind = 'edit'))";

    /** The cmid of an admin's recall: this prefix and a random UUID. */
    public static final String ADMIN_CMID_PREFIX = "admin.";

    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private final Duration editWindow;
    private final Duration recallWindow;

    /**
     * @param editWindow   how long after it was sent a message may be edited (zero: never)
     * @param recallWindow how long after it was sent a message may be recalled (zero: never)
     */
    public MessageChanges(DataSource db, Faults faults, Clock clock, Duration editWindow, Duration recallWindow) {
        this.db = db;
        this.faults = faults;
        this.clock = clock;
        this.editWindow = editWindow;
        this.recallWindow = recallWindow;
    }

    /**
     * Appends an edit of the sender's message at {@code seq}: {@code body} is its new text. Throws
     * {@link SendRejectedException} for refusals (the send's, and {@code NOT_A_MESSAGE},
     * {@code NOT_SENDER}, {@code RECALLED}, {@code TOO_LATE}) and {@link DatabaseUnavailableException}
     * when the outcome is unknown (resend with the same cmid).
     */
    public SendResult edit(DevicePrincipal who, String conv, String cmid, long seq, String body) {
        return change(new SendRules.Appending(who, conv, cmid, Event.EDIT, seq, body));
    }

    /** Appends a recall of the sender's message at {@code seq}, and empties its body and its edits'. Throws as {@link #edit}. */
    public SendResult recall(DevicePrincipal who, String conv, String cmid, long seq) {
        return change(new SendRules.Appending(who, conv, cmid, Event.RECALL, seq, ""));
    }

    private SendResult change(SendRules.Appending a) {
        try {
            return attempt(a);
        } catch (SendService.CmidRace race) {
            return attempt(a);   // a concurrent request with the same cmid committed first: now its dup
        }
    }

    private SendResult attempt(SendRules.Appending a) {
        try {
            return Transactions.run(db, a.kind(), c -> inTransaction(c, a));
        } catch (AnsweredBy answer) {
            return answer.result;   // rolled back: nothing of this transaction is kept
        }
    }

    private SendResult inTransaction(Connection c, SendRules.Appending a) throws SQLException {
        String user;
        try (PreparedStatement ps = c.prepareStatement(SendSql.PRECHECK)) {
            ps.setString(1, a.conv());
            ps.setString(2, a.conv());
            ps.setString(3, a.cmid());
            ps.setString(4, a.who().deviceId());
            try (ResultSet rs = ps.executeQuery()) {
                SendRules.Facts facts = rs.next() ? SendRules.read(rs, rs.getBoolean(SendRules.PRECHECK_CONV_EXISTS)) : SendRules.NO_DEVICE;
                if (SendRules.decide(a, facts) == SendRules.Verdict.DUP) throw new AnsweredBy(SendRules.storedDup(rs, a));
                user = facts.user();
            }
        }
        long seq = ConversationLog.nextSeq(c, a.conv()).orElseThrow(() -> SendRules.unknownConv(a.conv()));
        try (PreparedStatement ps = c.prepareStatement(TARGET)) {
            ps.setString(1, a.conv());
            ps.setString(2, a.conv());
            ps.setLong(3, a.ref());
            try (ResultSet rs = ps.executeQuery()) {
                decideTarget(a, user, rs.next() ? rs : null);
            }
        }
        return append(c, a.conv(), seq, a.kind(), user, a.who().deviceId(), a.cmid(), a.body(), a.ref(), a.who().installEpoch());
    }

    /**
     * Recalls the message at {@code seq} for an admin (moderation, {@code POST
     * /admin/conversations/{conv}/messages/{seq}/recall}): a recall event like the sender's, in the
     * sender's name (the log's rule "a recall is its message's sender's" holds for every consumer),
     * with no device ({@code device} null on the event topic: no device of the sender asked for it)
     * and a cmid of its own ({@link #ADMIN_CMID_PREFIX}). Neither the sender's membership nor the
     * recall window applies. A message already recalled is answered with its recall (a dup).
     *
     * @throws SendRejectedException {@code UNKNOWN_CONV}, or {@code NOT_A_MESSAGE} when {@code seq} is no message
     */
    public SendResult recallAsAdmin(String conv, long seq) {
        try {
            return Transactions.run(db, "admin recall", c -> {
                long at = ConversationLog.nextSeq(c, conv).orElseThrow(() -> SendRules.unknownConv(conv));
                String sender;
                try (PreparedStatement ps = c.prepareStatement(TARGET)) {
                    ps.setString(1, conv);
                    ps.setString(2, conv);
                    ps.setLong(3, seq);
                    try (ResultSet rs = ps.executeQuery()) {
                        if (!rs.next() || !Event.MSG.equals(rs.getString(1))) {
                            throw new SendRejectedException(ErrorCode.NOT_A_MESSAGE, "no message at seq " + seq + " in " + conv);
                        }
                        if (rs.getObject(4) != null) {
                            throw new AnsweredBy(new SendResult(conv, rs.getLong(4), rs.getString(5), true, 0, rs.getTimestamp(6).toInstant()));
                        }
                        sender = rs.getString(2);
                    }
                }
                return append(c, conv, at, Event.RECALL, sender, null, ADMIN_CMID_PREFIX + UUID.randomUUID(), "", seq, 0);
            });
        } catch (AnsweredBy answer) {
            return answer.result;
        }
    }

    /** Inserts the change at {@code seq} (allocated by the caller) and, for a recall, empties what it takes back. */
    private SendResult append(Connection c, String conv, long seq, String kind, String user, String device, String cmid, String body,
                              long ref, int epoch) throws SQLException {
        faults.maybeHalt(FaultPoint.SEND_BEFORE_INSERT);
        faults.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        String mid = ConversationLog.newEventId(clock);
        Instant at;
        try (PreparedStatement ps = c.prepareStatement(INSERT_CHANGE)) {
            ps.setString(1, conv);
            ps.setLong(2, seq);
            ps.setString(3, kind);
            ps.setString(4, mid);
            ps.setString(5, user);
            ps.setString(6, device);
            ps.setString(7, cmid);
            ps.setString(8, body);
            ps.setLong(9, ref);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                at = rs.getTimestamp(1).toInstant();
            }
        } catch (SQLException e) {
            if (SendService.isCmidRace(e)) throw new SendService.CmidRace();
            throw e;
        }
        if (Event.RECALL.equals(kind)) {
            try (PreparedStatement ps = c.prepareStatement(EMPTY_RECALLED)) {
                ps.setLong(1, seq);
                ps.setString(2, conv);
                ps.setLong(3, ref);
                ps.setLong(4, ref);
                ps.executeUpdate();
            }
        }
        faults.maybeHalt(FaultPoint.SEND_BEFORE_COMMIT);
        return new SendResult(conv, seq, mid, false, epoch, at);
    }

    /**
     * The rules of the message a change refers to ({@code target} on its {@link #TARGET} row, null
     * when there is no event at that seq), in this order: it is a message, the requester sent it,
     * it is not recalled (a second recall is answered with the first), the requester is still a
     * member, and the message is within the window.
     */
    private void decideTarget(SendRules.Appending a, String user, ResultSet target) throws SQLException {
        if (target == null || !Event.MSG.equals(target.getString(1))) {
            throw new SendRejectedException(ErrorCode.NOT_A_MESSAGE, "no message at seq " + a.ref() + " in " + a.conv());
        }
        if (!user.equals(target.getString(2))) {
            throw new SendRejectedException(ErrorCode.NOT_SENDER, "only the sender of seq " + a.ref() + " may " + a.kind() + " it");
        }
        if (target.getObject(4) != null) {
            if (Event.EDIT.equals(a.kind())) throw new SendRejectedException(ErrorCode.RECALLED, "seq " + a.ref() + " was recalled");
            throw new AnsweredBy(new SendResult(a.conv(), target.getLong(4), target.getString(5), true, a.who().installEpoch(),
                    target.getTimestamp(6).toInstant()));
        }
        if (!target.getBoolean(7)) throw SendRules.notMember(a.conv());
        Duration window = Event.EDIT.equals(a.kind()) ? editWindow : recallWindow;
        Instant sent = target.getTimestamp(3).toInstant();
        if (Duration.between(sent, clock.instant()).compareTo(window) > 0) {
            throw new SendRejectedException(ErrorCode.TOO_LATE, "seq " + a.ref() + " was sent more than " + window.toSeconds()
                    + " s ago; it can no longer be " + (Event.EDIT.equals(a.kind()) ? "edited" : "recalled"));
        }
    }

    /** Internal signal: the request is answered by an event already committed (a dup); the transaction rolls back. */
    private static final class AnsweredBy extends RuntimeException {
        final transient SendResult result;

        AnsweredBy(SendResult result) {
            super(null, null, false, false);
            this.result = result;
        }
    }

}
