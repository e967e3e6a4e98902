package im.ingest;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;

/** A send that must not be written; each reason carries the wire error code it is answered with. */
public final class SendRejectedException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** Why a send was refused. */
    public enum Reason {
        STALE_INSTALL(ErrorCode.STALE_INSTALL),
        UNKNOWN_CONV(ErrorCode.UNKNOWN_CONV),
        NOT_MEMBER(ErrorCode.NOT_MEMBER),
        CMID_CONFLICT(ErrorCode.CMID_CONFLICT);

        private final ErrorCode code;

        Reason(ErrorCode code) {
            this.code = code;
        }

        public ErrorCode code() {
            return code;
        }
    }

    private final Reason reason;

    public SendRejectedException(Reason reason, String message) {
        super(reason.code(), message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
