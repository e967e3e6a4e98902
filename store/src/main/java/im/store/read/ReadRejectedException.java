package im.store.read;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;
import java.util.Set;

/** A read that is not allowed, answered with its wire code. */
public final class ReadRejectedException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** The codes reads are refused with. */
    public static final Set<ErrorCode> CODES = Set.of(ErrorCode.STALE_INSTALL, ErrorCode.BAD_TOKEN, ErrorCode.UNKNOWN_CONV, ErrorCode.NOT_MEMBER,
            ErrorCode.NOT_SENDER);

    public ReadRejectedException(ErrorCode code, String message) {
        super(code, CODES, message);
    }
}
