package im.store.read;

import im.protocol.CatchUpPosition;
import im.protocol.CaughtUpRange;
import im.protocol.Event;
import java.util.List;

/**
 * A page of a catch-up across conversations: events in (conversation, seq) order, the range of
 * seqs it covers of each conversation, and, when {@code more}, the position the next page resumes after.
 */
public record CatchUpPage(List<Event> events, List<CaughtUpRange> convs, boolean more, CatchUpPosition after) {
    public CatchUpPage {
        events = List.copyOf(events);
        convs = List.copyOf(convs);
    }
}
