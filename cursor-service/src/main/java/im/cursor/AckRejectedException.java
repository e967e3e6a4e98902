package im.cursor;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;

/** An ack that must not change the cursor; each reason carries the wire error code it is answered with. */
public final class AckRejectedException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** Why an ack was refused. */
    public enum Reason {
        STALE_INSTALL(ErrorCode.STALE_INSTALL),
        UNKNOWN_CONV(ErrorCode.UNKNOWN_CONV),
        NOT_MEMBER(ErrorCode.NOT_MEMBER),
        CURSOR_AHEAD(ErrorCode.CURSOR_AHEAD);

        private final ErrorCode code;

        Reason(ErrorCode code) {
            this.code = code;
        }

        public ErrorCode code() {
            return code;
        }
    }

    private final Reason reason;

    public AckRejectedException(Reason reason, String message) {
        super(reason.code(), message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
