package im.protocol;

import java.util.Objects;

/**
 * {@code typing}: the user is typing in {@code conv}. Ephemeral: never stored, routed to the
 * conversation's other members' online devices as a {@link TypingPush}, throttled per connection
 * and conversation. No reply when it is taken; an {@code error} when it is refused.
 */
public record Typing(String rid, String conv) implements ClientFrame {
    public Typing {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
    }
}
