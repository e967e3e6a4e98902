package im.protocol;

import java.util.Objects;

/**
 * {@code sent}: the message is committed in PostgreSQL with {@code seq}. {@code dup}
 * is true when the cmid was already stored; {@code seq} and {@code mid} are then the
 * original ones.
 */
public record Sent(String rid, String conv, long seq, String mid, boolean dup, int epoch) implements ServerFrame {
    public Sent {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(mid, "mid");
    }
}
