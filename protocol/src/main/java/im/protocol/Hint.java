package im.protocol;

import java.util.Objects;

/**
 * {@code hint}: the server believes this device is behind in {@code conv} (head is
 * {@code head}); the device should {@code sync} from its cursor. {@code why} is
 * informational (e.g. {@code "sweep"}).
 */
public record Hint(String conv, long head, String why) implements ServerFrame {
    public Hint {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(why, "why");
    }
}
