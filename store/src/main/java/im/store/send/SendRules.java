package im.store.send;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.Event;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The rules that decide a send from what its pre-check read, in the order they apply: the
 * device's install ({@code STALE_INSTALL}) and credential ({@code BAD_TOKEN}), an earlier send of
 * the same (sender, cmid) ({@code dup}, or {@code CMID_CONFLICT} if its conversation or body
 * differ), the conversation ({@code UNKNOWN_CONV}) and the sender's current membership
 * ({@code NOT_MEMBER}); else the send is accepted. The one statement of them: the per-send
 * transaction ({@link SendService}, {@link SendSql#PRECHECK}) and the group-commit batch
 * ({@link SendBatch}, {@link SendSql#BATCH_PRECHECK}) read the facts in SQL and decide here.
 * {@code SendRulesIT} checks both reads against these rules over a table of cases.
 */
final class SendRules {
    private SendRules() {}

    /** What a send is decided on. */
    enum Verdict {
        /** A send of its own: it takes the conversation's next seq. */
        ACCEPT,
        /** The earlier send of this (sender, cmid): answered with its seq, writes nothing. */
        DUP
    }

    /** The column of {@link SendSql#PRECHECK} that says whether the conversation exists (after the eleven shared ones). */
    static final int PRECHECK_CONV_EXISTS = 12;

    /**
     * What a device asks to append: a message ({@code kind} msg, {@code ref} 0), or an edit or a
     * recall of the message at {@code ref} ({@code body} empty for a recall).
     */
    record Appending(DevicePrincipal who, String conv, String cmid, String kind, long ref, String body) {
        static Appending of(SendService.Request req) {
            return new Appending(req.who(), req.conv(), req.cmid(), Event.MSG, 0, req.body());
        }
    }

    /**
     * The facts one pre-check row holds about a send.
     *
     * @param installEpoch the device's current install epoch; null when there is no such device
     * @param convExists   whether the conversation exists
     * @param member       whether the sender is a member now (an open membership period)
     * @param earlier      the earlier event with this (sender, cmid); null if none
     */
    record Facts(Integer installEpoch, long credential, String user, boolean convExists, boolean member, Earlier earlier) {
        /** The same facts, with {@code earlier} (a send before this one in the same batch) as the earlier send. */
        Facts withEarlier(SendService.Request earlier) {
            return new Facts(installEpoch, credential, user, convExists, member,
                    new Earlier(earlier.conv(), Event.MSG, 0, earlier.body()));
        }
    }

    /**
     * An earlier event of the same (sender, cmid): its conversation, kind, ref (0 but for an edit or
     * a recall) and body (null when it was recalled: a resend of a recalled message is still its dup).
     */
    record Earlier(String conv, String kind, long ref, String body) {
        /** Whether {@code a} asks for what this event already is. */
        boolean sameAs(Appending a) {
            return conv.equals(a.conv()) && kind.equals(a.kind()) && ref == a.ref() && (body == null || body.equals(a.body()));
        }
    }

    /** The facts read by a device that does not exist (no pre-check row). */
    static final Facts NO_DEVICE = new Facts(null, 0, null, false, false, null);

    /**
     * The facts of the pre-check row {@code rs} is on: {@link SendSql#PRECHECK} and
     * {@link SendSql#BATCH_PRECHECK} share their first eleven columns (install epoch, user, member,
     * the earlier event's conv, seq, mid, body, created_at, the credential, the earlier event's kind
     * and ref). {@code convExists} is the caller's: the per-send pre-check reads it, the batch knows
     * it from the conversations it locked.
     */
    static Facts read(ResultSet rs, boolean convExists) throws SQLException {
        String earlierConv = rs.getString(4);
        Earlier earlier = earlierConv == null ? null : new Earlier(earlierConv, rs.getString(10), rs.getLong(11), rs.getString(7));
        return new Facts(rs.getObject(1, Integer.class), rs.getLong(9), rs.getString(2), convExists, rs.getBoolean(3), earlier);
    }

    /** The earlier send the pre-check row {@code rs} is on, as the answer to its dup {@code req}. */
    static SendResult storedDup(ResultSet rs, Appending req) throws SQLException {
        return new SendResult(req.conv(), rs.getLong(5), rs.getString(6), true, req.who().installEpoch(),
                rs.getTimestamp(8).toInstant());
    }

    static SendResult storedDup(ResultSet rs, SendService.Request req) throws SQLException {
        return storedDup(rs, Appending.of(req));
    }

    /** Decides {@code req} on {@code f}: accepted or a dup, or refused with a {@link SendRejectedException}. */
    static Verdict decide(SendService.Request req, Facts f) {
        return decide(Appending.of(req), f);
    }

    /** Decides a message, an edit or a recall on {@code f}; the target of an edit or a recall is {@link MessageChanges}'. */
    static Verdict decide(Appending req, Facts f) {
        DevicePrincipal who = req.who();
        if (f.installEpoch() == null || f.installEpoch() != who.installEpoch()) {
            throw new SendRejectedException(ErrorCode.STALE_INSTALL,
                    "device " + who.deviceId() + " was reinstalled; this install may not send");
        }
        if (f.credential() != who.credential()) throw new SendRejectedException(ErrorCode.BAD_TOKEN, DevicePrincipal.CREDENTIAL_SUPERSEDED);
        if (f.earlier() != null) {
            if (!f.earlier().sameAs(req)) {
                throw new SendRejectedException(ErrorCode.CMID_CONFLICT, "cmid " + req.cmid() + " was already used for a different "
                        + (Event.MSG.equals(f.earlier().kind()) ? "message" : f.earlier().kind()));
            }
            return Verdict.DUP;
        }
        if (!f.convExists()) throw unknownConv(req.conv());
        if (!f.member()) throw notMember(req.conv());
        return Verdict.ACCEPT;
    }

    static SendRejectedException unknownConv(String conv) {
        return new SendRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv);
    }

    /** The refusal of a sender who is not a member, also when a leave overtook the send under the lock. */
    static SendRejectedException notMember(String conv) {
        return new SendRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
    }
}
