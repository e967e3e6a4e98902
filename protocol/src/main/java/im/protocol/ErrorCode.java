package im.protocol;

import java.util.Optional;

/**
 * Stable error codes of the {@code error} frame. The constant name is the wire
 * string, so renaming a constant is a protocol change. Each code says whether the
 * server closes the connection after sending it, and whether the same request may
 * succeed if retried unchanged ({@link #retriable()}): the client SDK keeps a
 * retriable outbox entry and drops a terminal one.
 */
public enum ErrorCode {
    BAD_JSON("frame is not parseable JSON, not an object, has duplicate keys or is nested too deep"),
    UNKNOWN_TYPE("field t is missing, not a string or not a known frame type"),
    MISSING_FIELD("a required field is missing or null"),
    BAD_FIELD("a field has the wrong type, is out of range, does not match its pattern, is unknown,"
            + " or is text the server cannot store (U+0000)"),
    BODY_TOO_LARGE("body exceeds Limits.MAX_BODY_BYTES UTF-8 bytes"),
    FRAME_TOO_LARGE("frame exceeds Limits.MAX_FRAME_BYTES UTF-8 bytes"),
    BAD_UTF8("text is not well-formed Unicode (e.g. a lone surrogate)"),
    BINARY_UNSUPPORTED("binary WebSocket frames are not supported; send JSON text frames"),
    NOT_AUTHENTICATED("a frame other than auth was sent before authentication"),
    ALREADY_AUTHENTICATED("auth was sent on an authenticated connection"),
    BAD_TOKEN("the device token is invalid or expired", 4001),
    STALE_INSTALL("the token's install epoch is older than the device's; the app was reinstalled", 4003),
    UNKNOWN_CONV("the conversation does not exist"),
    NOT_MEMBER("the user is not a member of the conversation"),
    CMID_CONFLICT("the cmid was already used with a different conversation or body"),
    CURSOR_AHEAD("ack seq is above the conversation head"),
    RATE_LIMITED("too many requests; retry later"),
    UNAVAILABLE("a database or dependency is unavailable; retry later"),
    /**
     * A server bug, never a verdict on the request: input the server cannot handle is refused with
     * a terminal code at the edge. Retriable, but clients cap their attempts (a bug may be
     * deterministic for one request) and then fail the request.
     */
    INTERNAL("unexpected server error"),
    NOT_A_MESSAGE("edit or recall: the event at that seq is not a message (or there is none)"),
    NOT_SENDER("edit or recall: only the message's sender may change it"),
    TOO_LATE("edit or recall: the message is older than the window (IM_EDIT_WINDOW_S, IM_RECALL_WINDOW_S)"),
    RECALLED("edit: the message was recalled");

    private final String description;
    private final int closeStatus;

    ErrorCode(String description) {
        this(description, 0);
    }

    ErrorCode(String description, int closeStatus) {
        this.description = description;
        this.closeStatus = closeStatus;
    }

    /** The string used on the wire (the constant name). */
    public String wire() {
        return name();
    }

    /** One line saying what the code means. */
    public String description() {
        return description;
    }

    /** True when the server closes the WebSocket right after the error frame. */
    public boolean closesConnection() {
        return closeStatus != 0;
    }

    /** The WebSocket close status sent after the error frame, or 0 if the connection stays open. */
    public int closeStatus() {
        return closeStatus;
    }

    /** True when the same request may succeed later unchanged (UNAVAILABLE, RATE_LIMITED, INTERNAL). */
    public boolean retriable() {
        return this == UNAVAILABLE || this == RATE_LIMITED || this == INTERNAL;
    }

    /** The code for a wire string, or empty if this version does not know it. */
    public static Optional<ErrorCode> fromWire(String wire) {
        if (wire == null) {
            return Optional.empty();
        }
        for (ErrorCode c : values()) {
            if (c.name().equals(wire)) {
                return Optional.of(c);
            }
        }
        return Optional.empty();
    }
}
