package im.read;

/** A read that is not allowed; the reason names are wire error codes. */
public final class ReadRejectedException extends RuntimeException {
    /** Why a read was refused. */
    public enum Reason { STALE_INSTALL, UNKNOWN_CONV, NOT_MEMBER }

    private final Reason reason;

    public ReadRejectedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
