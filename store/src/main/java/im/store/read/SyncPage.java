package im.store.read;

import im.protocol.Event;
import java.util.List;

/**
 * Visible events after a seq, read in one snapshot together with the head. When {@code more} is
 * false the device holds every visible event up to {@code head} once it stored this page.
 */
public record SyncPage(String conv, List<Event> events, boolean more, long head) {}
