package im.protocol;

import java.util.List;
import java.util.Objects;

/**
 * {@code caughtup}: a page of the events the device had not acknowledged, in (conversation, seq)
 * order. {@code convs} says, for every conversation the page covers, which range of seqs it
 * covers ({@link CaughtUpRange}): the device stores each as the page of a {@code sync} and acks.
 * When {@code more}, the next {@link CatchUp} sends {@code after} back (the position of the last event).
 */
public record CaughtUp(String rid, List<Event> events, List<CaughtUpRange> convs, boolean more, CatchUpPosition after)
        implements ServerFrame {
    public CaughtUp {
        Objects.requireNonNull(rid, "rid");
        events = List.copyOf(events);
        convs = List.copyOf(convs);
        if (more && after == null) throw new IllegalArgumentException("a page with more needs the position after it");
    }
}
