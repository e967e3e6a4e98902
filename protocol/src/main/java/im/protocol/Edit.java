package im.protocol;

import java.util.Objects;

/**
 * {@code edit}: replace the text of the sender's own message at {@code seq} in {@code conv} with
 * {@code body}. Appended to the log as an event of kind {@link Event#EDIT}; answered with
 * {@link Sent} like a send. {@code cmid} is the client's idempotency key, as for {@link Send}.
 */
public record Edit(String rid, String conv, String cmid, long seq, String body) implements ClientFrame {
    public Edit {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(cmid, "cmid");
        Objects.requireNonNull(body, "body");
    }
}
