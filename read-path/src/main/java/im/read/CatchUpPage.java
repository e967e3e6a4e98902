package im.read;

import im.protocol.CatchUpPosition;
import im.protocol.ConvHead;
import im.protocol.Event;
import java.util.List;

/**
 * A page of a catch-up across conversations: events in (conversation, seq) order, the heads of
 * the conversations it completes, and, when {@code more}, the position the next page resumes after.
 */
public record CatchUpPage(List<Event> events, List<ConvHead> heads, boolean more, CatchUpPosition after) {
    public CatchUpPage {
        events = List.copyOf(events);
        heads = List.copyOf(heads);
    }
}
