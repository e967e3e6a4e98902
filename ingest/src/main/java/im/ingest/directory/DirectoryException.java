package im.ingest.directory;

/** An admin or authentication request that cannot be carried out, with a stable code. */
public final class DirectoryException extends RuntimeException {
    /** Stable codes; the admin API maps them to HTTP statuses, the gateway to wire errors. */
    public enum Code {
        /** The token matches no install of any device. */
        BAD_TOKEN,
        /** The token belongs to an earlier install of the device. */
        STALE_INSTALL,
        ALREADY_EXISTS,
        NOT_FOUND,
        NOT_MEMBER,
        INVALID
    }

    private final Code code;

    public DirectoryException(Code code, String message) {
        super(message);
        this.code = code;
    }

    public Code code() {
        return code;
    }
}
