package im.protocol;

import java.util.List;
import java.util.Objects;

/**
 * {@code caughtup}: a page of the events the device had not acknowledged, in (conversation, seq)
 * order. {@code heads} names each conversation whose visible events up to its head this page
 * completes: once the page is stored the device holds all of them and may ack that head (it passes
 * over seqs it may not see, as after a {@link Synced} page with {@code more} false). When
 * {@code more}, the next {@link CatchUp} sends {@code after} back (the position of the last event).
 */
public record CaughtUp(String rid, List<Event> events, List<ConvHead> heads, boolean more, CatchUpPosition after)
        implements ServerFrame {
    public CaughtUp {
        Objects.requireNonNull(rid, "rid");
        events = List.copyOf(events);
        heads = List.copyOf(heads);
        if (more && after == null) throw new IllegalArgumentException("a page with more needs the position after it");
    }
}
