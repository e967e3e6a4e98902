package im.client.api;

import java.util.Objects;

/**
 * One entry of the durable outbox: a message written locally before its first send and
 * kept until the server confirmed it ({@code sent}) or rejected it terminally. Every resend
 * uses the same {@code cmid}, so the server stores it at most once. {@code internalErrors}
 * counts the attempts the server answered {@code INTERNAL}; the client gives the entry up at
 * {@link ClientOptions#maxInternalErrors()}, so a server bug that fails this one message
 * every time cannot keep it in the outbox forever.
 */
public record PendingSend(String cmid, String conv, String body, long createdAtMillis, int internalErrors) {
    public PendingSend {
        Objects.requireNonNull(cmid, "cmid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(body, "body");
        if (internalErrors < 0) {
            throw new IllegalArgumentException("internalErrors: must not be negative, got " + internalErrors);
        }
    }

    /** A new entry: no attempt answered yet. */
    public PendingSend(String cmid, String conv, String body, long createdAtMillis) {
        this(cmid, conv, body, createdAtMillis, 0);
    }
}
