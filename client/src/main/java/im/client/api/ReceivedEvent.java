package im.client.api;

import im.protocol.Event;
import java.util.Objects;

/**
 * One conversation event as this device stored it: the fields of the protocol {@link Event}.
 * {@code cmid} and {@code body} are null for {@code join}/{@code leave}. Stored once per
 * ({@code conv}, {@code seq}); a second copy (a repeated push, a sync over a pushed event) is a no-op.
 */
public record ReceivedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at) {
    public ReceivedEvent {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mid, "mid");
        Objects.requireNonNull(sender, "sender");
        if (seq < 1) {
            throw new IllegalArgumentException("seq: must be at least 1, got " + seq);
        }
    }

    public static ReceivedEvent of(Event e) {
        return new ReceivedEvent(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body(), e.at());
    }

    public Event toEvent() {
        return new Event(conv, seq, kind, mid, sender, cmid, body, at);
    }
}
