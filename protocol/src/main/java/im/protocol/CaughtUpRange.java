package im.protocol;

import java.util.Objects;

/**
 * What a {@link CaughtUp} page holds of one conversation: every event of {@code conv} visible to
 * the reader with {@code after < seq <= upTo} (those it may not see are absent, as from a
 * {@link Synced} page). {@code upTo} is the head the reader may know (a former member's is its
 * leave) when the page completes the conversation, else the last event of the page. A device that
 * holds every visible event up to {@code after} holds them all up to {@code upTo} once it stored
 * the page, exactly as after a {@code synced} page from {@code after} with {@code more} false and
 * {@code head} = {@code upTo}.
 */
public record CaughtUpRange(String conv, long after, long upTo) {
    public CaughtUpRange {
        Objects.requireNonNull(conv, "conv");
    }
}
