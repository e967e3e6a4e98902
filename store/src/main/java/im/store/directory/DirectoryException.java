package im.store.directory;

import im.infra.error.RejectedException;
import im.protocol.ErrorCode;

/**
 * An admin or authentication request that cannot be carried out. Its {@link Code} is the admin
 * API's finer vocabulary (answered as {@code {"error": CODE}} there); each code also carries the
 * wire {@link ErrorCode} of the same verdict, which is what the WebSocket and the client HTTP API
 * answer. The admin-only codes have no wire code of their own and map to {@code BAD_FIELD}: like
 * it, they are terminal verdicts on a field of the request (an id that is taken, unknown or
 * malformed).
 */
public final class DirectoryException extends RejectedException {
    private static final long serialVersionUID = 1L;

    /** Stable codes; the admin API maps them to HTTP statuses, the gateway to wire errors. */
    public enum Code {
        /** The token matches no install of any device. */
        BAD_TOKEN(ErrorCode.BAD_TOKEN),
        /** The token belongs to an earlier install of the device. */
        STALE_INSTALL(ErrorCode.STALE_INSTALL),
        ALREADY_EXISTS(ErrorCode.BAD_FIELD),
        NOT_FOUND(ErrorCode.BAD_FIELD),
        NOT_MEMBER(ErrorCode.NOT_MEMBER),
        /** The group already has {@code IM_MAX_GROUP_MEMBERS} current members. */
        GROUP_FULL(ErrorCode.BAD_FIELD),
        INVALID(ErrorCode.BAD_FIELD);

        private final ErrorCode wire;

        Code(ErrorCode wire) {
            this.wire = wire;
        }

        /** The wire code of the same verdict. */
        public ErrorCode wire() {
            return wire;
        }
    }

    private final Code code;

    public DirectoryException(Code code, String message) {
        super(code.wire(), message);
        this.code = code;
    }

    /** The admin API's code; {@link #errorCode()} is the wire one. */
    public Code code() {
        return code;
    }
}
