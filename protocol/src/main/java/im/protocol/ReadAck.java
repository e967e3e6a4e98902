package im.protocol;

import java.util.Objects;

/** {@code readack}: the user's read state of {@code conv} after a {@link Read} (its cursor may be above the request's). */
public record ReadAck(String rid, String conv, ReadState state) implements ServerFrame {
    public ReadAck {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(state, "state");
    }
}
