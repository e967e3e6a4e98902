package im.protocol;

import java.util.Objects;

/**
 * A frame was rejected. Carries the stable {@link ErrorCode} for the {@code error}
 * reply and the request's {@code rid} when it could be read (else null), so the reply
 * can be correlated. The message names the offending field, e.g.
 * {@code "seq: must be an integer between 0 and 9007199254740991"}.
 */
public final class ProtocolException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final String rid;

    public ProtocolException(ErrorCode code, String rid, String message) {
        this(code, rid, message, null);
    }

    public ProtocolException(ErrorCode code, String rid, String message, Throwable cause) {
        super(message, cause);
        this.code = Objects.requireNonNull(code, "code");
        this.rid = rid;
    }

    public ErrorCode code() {
        return code;
    }

    /** The request's rid if it was present and valid, else null. */
    public String rid() {
        return rid;
    }

    @Override
    public String toString() {
        return "ProtocolException[" + code + (rid == null ? "" : ", rid=" + rid) + "]: " + getMessage();
    }
}
