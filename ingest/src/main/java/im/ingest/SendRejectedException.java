package im.ingest;

/** A send that must not be written, with the stable reason the gateway turns into an error code. */
public final class SendRejectedException extends RuntimeException {
    /** Why a send was refused; the names are the wire error codes. */
    public enum Reason { STALE_INSTALL, UNKNOWN_CONV, NOT_MEMBER, CMID_CONFLICT }

    private final Reason reason;

    public SendRejectedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
