package im.protocol;

import java.util.List;
import java.util.Objects;

/**
 * {@code synced}: one page of events of {@code conv} in seq order; {@code more} is
 * true when further events exist after the last one; {@code head} is the
 * conversation head when the page was read.
 */
public record Synced(String rid, String conv, List<Event> events, boolean more, long head) implements ServerFrame {
    public Synced {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        events = List.copyOf(events);
    }
}
