package im.client.api;

import im.protocol.Event;
import java.util.Objects;

/**
 * One conversation event as this device stored it: the fields of the protocol {@link Event}.
 * {@code cmid} and {@code body} are null for {@code join}/{@code leave}. Stored once per
 * ({@code conv}, {@code seq}); a second copy (a repeated push, a sync over a pushed event) is a no-op.
 *
 * <p>An {@code edit} or a {@code recall} refers to the message it changes by {@code ref} (0 for every
 * other kind). {@code recalled} is true on a message, or an edit of it, that was recalled: its body
 * is then {@code ""}, locally as on the server. {@code edited} is the text of the message's latest
 * edit the device holds, in what the local queries return ({@code conversations}, {@code eventsBefore},
 * {@code eventsAfter}, {@code search}); null when it holds none, and in events as received.
 * {@link #text()} is what to show.
 *
 * <p>{@code count} is set on a bulk join only (docs/protocol.md, "A bulk join"): the number of users it
 * added at once, at least 2, {@code sender} the first of them; 0 on every other event. Show it as
 * "{@code sender} and {@code count - 1} others joined". Stores written before schema 6 of the local
 * store did not keep it: their bulk joins read 0.
 */
public record ReceivedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at,
                            int count, long ref, boolean recalled, String edited) {
    public ReceivedEvent {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mid, "mid");
        Objects.requireNonNull(sender, "sender");
        if (seq < 1) {
            throw new IllegalArgumentException("seq: must be at least 1, got " + seq);
        }
        if (count < 0) {
            throw new IllegalArgumentException("count: must not be negative, got " + count);
        }
    }

    /** An event that is not a bulk join (as before {@code count} was kept). */
    public ReceivedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at,
                         long ref, boolean recalled, String edited) {
        this(conv, seq, kind, mid, sender, cmid, body, at, 0, ref, recalled, edited);
    }

    /** An event that is neither an edit nor a recall, nor recalled, nor a bulk join. */
    public ReceivedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at) {
        this(conv, seq, kind, mid, sender, cmid, body, at, 0, 0, false, null);
    }

    public static ReceivedEvent of(Event e) {
        return new ReceivedEvent(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body(), e.at(), e.count(), e.ref(),
                e.recalled(), null);
    }

    public Event toEvent() {
        return new Event(conv, seq, kind, mid, sender, cmid, body, at, count, ref, recalled);
    }

    /** The text to show: the latest edit's, else the body ({@code ""} once recalled). */
    public String text() {
        return recalled ? "" : edited != null ? edited : body;
    }

    /** This event as a recall left it: no body, marked recalled. */
    public ReceivedEvent asRecalled() {
        return new ReceivedEvent(conv, seq, kind, mid, sender, cmid, "", at, count, ref, true, null);
    }
}
