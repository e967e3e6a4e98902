package im.store.cursor;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;
import java.util.Set;

/** An ack that must not change the cursor, answered with its wire code. */
public final class AckRejectedException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** The codes acks are refused with. */
    public static final Set<ErrorCode> CODES = Set.of(ErrorCode.STALE_INSTALL, ErrorCode.BAD_TOKEN, ErrorCode.UNKNOWN_CONV, ErrorCode.NOT_MEMBER, ErrorCode.CURSOR_AHEAD);

    public AckRejectedException(ErrorCode code, String message) {
        super(code, CODES, message);
    }
}
