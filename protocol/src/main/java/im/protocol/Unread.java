package im.protocol;

import java.util.Objects;

/**
 * {@code unread} (pushed): another device of this user moved the user's read cursor of
 * {@code conv}; {@code state} is the read state after it. Best effort like every push: a device
 * also gets the read state in {@code subbed}.
 */
public record Unread(String conv, ReadState state) implements ServerFrame {
    public Unread {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(state, "state");
    }
}
