package im.client;

import java.util.Objects;

/**
 * One entry of the durable outbox: a message written locally before its first send and
 * kept until the server confirmed it ({@code sent}) or rejected it terminally. Every resend
 * uses the same {@code cmid}, so the server stores it at most once.
 */
public record PendingSend(String cmid, String conv, String body, long createdAtMillis) {
    public PendingSend {
        Objects.requireNonNull(cmid, "cmid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(body, "body");
    }
}
