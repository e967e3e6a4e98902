package im.store.send;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;
import java.util.Set;

/** A send, edit or recall that must not be written, answered with its wire code. */
public final class SendRejectedException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** The codes sends are refused with; edits and recalls also with the last four. */
    public static final Set<ErrorCode> CODES = Set.of(ErrorCode.STALE_INSTALL, ErrorCode.BAD_TOKEN, ErrorCode.UNKNOWN_CONV, ErrorCode.NOT_MEMBER,
            ErrorCode.CMID_CONFLICT, ErrorCode.NOT_A_MESSAGE, ErrorCode.NOT_SENDER, ErrorCode.TOO_LATE, ErrorCode.RECALLED);

    public SendRejectedException(ErrorCode code, String message) {
        super(code, CODES, message);
    }
}
