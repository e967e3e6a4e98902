package im.infra.error;

import im.protocol.ErrorCode;
import java.util.Objects;
import java.util.Set;

/**
 * A request a service refused on purpose, with the stable wire {@link ErrorCode} it is answered
 * with. Every feature's rejection (send, ack, read, directory) extends this type, so the gateway
 * edge maps all of them in one place by {@link #errorCode()}, never by the name of some other enum:
 * renaming an {@code ErrorCode} constant breaks the build, not a request at runtime. A rejection is
 * a verdict on the request (terminal unless its code is {@link ErrorCode#retriable()}); anything
 * else thrown by a service is a failure the edge answers {@code INTERNAL} or {@code UNAVAILABLE}.
 */
public abstract class RejectedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    protected RejectedException(ErrorCode code, String message) {
        super(message);
        this.code = Objects.requireNonNull(code, "code");
    }

    /**
     * A rejection whose code must be one of the feature's {@code codes} (the verdicts it can reach);
     * any other is a programming error, refused here rather than answered to a client.
     */
    protected RejectedException(ErrorCode code, Set<ErrorCode> codes, String message) {
        this(code, message);
        if (!codes.contains(code)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + " cannot carry " + code + " (only " + codes + ")");
        }
    }

    /** The code of the {@code error} frame (and of the HTTP APIs' {@code error} field). */
    public final ErrorCode errorCode() {
        return code;
    }
}
