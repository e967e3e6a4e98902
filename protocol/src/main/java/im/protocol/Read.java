package im.protocol;

import java.util.Objects;

/**
 * {@code read}: the user has read every event of {@code conv} with seq &le; {@code seq} (on this
 * device). The user's read cursor is per user, not per device; it only moves up, and never above
 * the head the user may see. Answered by {@link ReadAck}; the user's other online devices get an
 * {@link Unread}.
 */
public record Read(String rid, String conv, long seq) implements ClientFrame {
    public Read {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
    }
}
