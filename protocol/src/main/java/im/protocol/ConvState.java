package im.protocol;

import java.util.Objects;

/**
 * One conversation in a {@link Subbed} reply: its head seq (the head the user may see), this
 * device's delivered cursor, and the user's read state ({@link ReadState}: the read cursor and the
 * unread count at {@code head}).
 */
public record ConvState(String conv, long head, long delivered, long read, long unread) {
    public ConvState {
        Objects.requireNonNull(conv, "conv");
    }

    /** The read state this entry tells: {@code read}, {@code unread} at {@code head}. */
    public ReadState readState() {
        return new ReadState(read, unread, head);
    }
}
