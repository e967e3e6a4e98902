package im.cursor;

/** An ack that must not change the cursor; the reason names are the wire error codes. */
public final class AckRejectedException extends RuntimeException {
    /** Why an ack was refused. */
    public enum Reason { STALE_INSTALL, UNKNOWN_CONV, NOT_MEMBER, CURSOR_AHEAD }

    private final Reason reason;

    public AckRejectedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
