package im.protocol;

import java.util.Objects;

/**
 * {@code typing} from the server: {@code user} is typing in {@code conv} (it sent {@code typing}
 * a moment ago). Show it for {@link Limits#TYPING_SHOW_MILLIS} unless another arrives or a message
 * of that user does; best effort, never stored, never repeated.
 */
public record TypingPush(String conv, String user) implements ServerFrame {
    public TypingPush {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(user, "user");
    }
}
