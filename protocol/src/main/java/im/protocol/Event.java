package im.protocol;

import java.util.Objects;

/**
 * One committed conversation event. {@code kind} is {@link #MSG}, {@link #JOIN} or
 * {@link #LEAVE}; {@code cmid} and {@code body} are null for join/leave (omitted on
 * the wire); {@code at} is the commit-side timestamp in epoch milliseconds. Devices
 * apply events idempotently by ({@code conv}, {@code seq}).
 */
public record Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at) {
    public static final String MSG = "msg";
    public static final String JOIN = "join";
    public static final String LEAVE = "leave";

    public Event {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mid, "mid");
        Objects.requireNonNull(sender, "sender");
    }
}
