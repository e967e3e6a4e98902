package im.protocol;

import java.util.Objects;

/**
 * {@code send}: append a message to conversation {@code conv}. {@code cmid} is the
 * client's idempotency key: a resend with the same cmid returns the original seq.
 */
public record Send(String rid, String conv, String cmid, String body) implements ClientFrame {
    public Send {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(cmid, "cmid");
        Objects.requireNonNull(body, "body");
    }
}
