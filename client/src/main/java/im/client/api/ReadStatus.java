package im.client.api;

import java.util.Objects;

/**
 * The read state of one conversation as this device shows it (docs/protocol.md, "Read state and
 * unread counts"): {@code read}, the user's read cursor (per user, the server's: every event up to
 * it is read, on whichever device); {@code unread}, the unread count now: the {@code unread} of the
 * latest read state the server gave plus the messages of other users this device holds above that
 * state's head. Never negative.
 */
public record ReadStatus(String conv, long read, long unread) {
    public ReadStatus {
        Objects.requireNonNull(conv, "conv");
        if (read < 0 || unread < 0) {
            throw new IllegalArgumentException("read and unread are never negative, got " + read + ", " + unread);
        }
    }
}
