package im.protocol;

import java.util.Objects;

/**
 * {@code ack}: cumulative delivery cursor — "this device has durably stored every
 * visible event of {@code conv} with seq &le; {@code seq}". Send it only after the
 * local store is durable.
 */
public record Ack(String rid, String conv, long seq) implements ClientFrame {
    public Ack {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
    }
}
