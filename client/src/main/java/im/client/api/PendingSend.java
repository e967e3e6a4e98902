package im.client.api;

import im.protocol.Event;
import java.util.Objects;

/**
 * One entry of the durable outbox: a message, an edit or a recall ({@code kind}; {@code ref} the seq
 * of the message an edit or a recall changes, 0 for a message) written locally before its first
 * send and kept until the server confirmed it ({@code sent}) or rejected it terminally. Every resend
 * uses the same {@code cmid}, so the server stores it at most once. {@code body} is the message's
 * text, an edit's new text, {@code ""} for a recall. {@code internalErrors} counts the attempts the
 * server answered {@code INTERNAL}; the client gives the entry up at
 * {@link ClientOptions#maxInternalErrors()}, so a server bug that fails this one request every time
 * cannot keep it in the outbox forever.
 */
public record PendingSend(String cmid, String conv, String body, long createdAtMillis, int internalErrors, String kind, long ref) {
    public PendingSend {
        Objects.requireNonNull(cmid, "cmid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(body, "body");
        Objects.requireNonNull(kind, "kind");
        if (internalErrors < 0) {
            throw new IllegalArgumentException("internalErrors: must not be negative, got " + internalErrors);
        }
        if (!Event.MSG.equals(kind) && !Event.isChange(kind)) {
            throw new IllegalArgumentException("kind: must be msg, edit or recall, got " + kind);
        }
        if (Event.isChange(kind) != (ref > 0)) {
            throw new IllegalArgumentException("ref: must be a seq for an edit or a recall and 0 for a message, got " + ref + " for " + kind);
        }
    }

    /** A message. */
    public PendingSend(String cmid, String conv, String body, long createdAtMillis, int internalErrors) {
        this(cmid, conv, body, createdAtMillis, internalErrors, Event.MSG, 0);
    }

    /** A new message: no attempt answered yet. */
    public PendingSend(String cmid, String conv, String body, long createdAtMillis) {
        this(cmid, conv, body, createdAtMillis, 0);
    }
}
