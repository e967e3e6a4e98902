package im.protocol;

/**
 * The user's read state of one conversation at one moment: {@code read}, the user's read cursor;
 * {@code unread}, the messages of other users the user may see with {@code read < seq <= head};
 * {@code head}, the head the user may see when the state was taken (a former member's: its
 * leave). Never negative. A device adds the messages of other users it receives with seq above
 * {@code head}: that sum is the conversation's unread count now.
 */
public record ReadState(long read, long unread, long head) {
    public ReadState {
        if (read < 0 || unread < 0 || head < 0) {
            throw new IllegalArgumentException("read state: read, unread and head are never negative, got "
                    + read + ", " + unread + ", " + head);
        }
    }

    /** No read cursor yet and nothing to read: a conversation just joined, or none. */
    public static final ReadState NONE = new ReadState(0, 0, 0);
}
