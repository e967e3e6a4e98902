package im.protocol;

import java.util.Objects;

/** {@code acked}: the device's merged cursor after the ack (may be larger than the ack's seq). */
public record Acked(String rid, String conv, long delivered) implements ServerFrame {
    public Acked {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
    }
}
