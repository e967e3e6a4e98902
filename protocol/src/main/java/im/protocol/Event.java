package im.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Objects;

/**
 * One committed conversation event. {@code kind} is {@link #MSG}, {@link #JOIN} or
 * {@link #LEAVE}; {@code cmid} and {@code body} are null for join/leave (omitted on
 * the wire); {@code at} is the commit-side timestamp in epoch milliseconds. Devices
 * apply events idempotently by ({@code conv}, {@code seq}). {@code count} is the number of users
 * a bulk join added at once (at least 2; {@code sender} is the first of them, and the list itself
 * is never sent to devices); 0, and absent on the wire, for every other event.
 */
public record Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at,
                    @JsonInclude(JsonInclude.Include.NON_DEFAULT) int count) {
    public static final String MSG = "msg";
    public static final String JOIN = "join";
    public static final String LEAVE = "leave";

    public Event {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mid, "mid");
        Objects.requireNonNull(sender, "sender");
        if (count < 0) throw new IllegalArgumentException("count must not be negative, got " + count);
    }

    /** A single event: a message, or a join or leave of one user. */
    public Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at) {
        this(conv, seq, kind, mid, sender, cmid, body, at, 0);
    }
}
