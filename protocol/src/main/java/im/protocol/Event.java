package im.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Objects;

/**
 * One committed conversation event. {@code kind} is {@link #MSG}, {@link #JOIN}, {@link #LEAVE},
 * {@link #EDIT} or {@link #RECALL}; {@code cmid} is null for join/leave (omitted on the wire);
 * {@code at} is the commit-side timestamp in epoch milliseconds. Devices apply events
 * idempotently by ({@code conv}, {@code seq}). {@code count} is the number of users a bulk join
 * added at once (at least 2; {@code sender} is the first of them, and the list itself is never
 * sent to devices); 0, and absent on the wire, for every other event.
 *
 * <p>An edit or a recall refers to the message it changes by its seq, {@code ref} (0, and absent on
 * the wire, for every other kind). An edit's {@code body} is the message's new text; a recall's
 * is empty. {@code recalled} is true on a message, or an edit of it, that was recalled after it was
 * committed: its body is then empty on every read path (absent on the wire when false).
 */
public record Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at,
                    @JsonInclude(JsonInclude.Include.NON_DEFAULT) int count,
                    @JsonInclude(JsonInclude.Include.NON_DEFAULT) long ref,
                    @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean recalled) {
    public static final String MSG = "msg";
    public static final String JOIN = "join";
    public static final String LEAVE = "leave";
    public static final String EDIT = "edit";
    public static final String RECALL = "recall";

    public Event {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mid, "mid");
        Objects.requireNonNull(sender, "sender");
        if (count < 0) throw new IllegalArgumentException("count must not be negative, got " + count);
        if (isChange(kind) != (ref > 0)) throw new IllegalArgumentException(kind + " with ref " + ref);
        if (ref >= seq && ref > 0) throw new IllegalArgumentException("ref " + ref + " must be below seq " + seq);
    }

    /** A single event: a message, or a join or leave of one user. */
    public Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at) {
        this(conv, seq, kind, mid, sender, cmid, body, at, 0);
    }

    /** An event that is neither an edit nor a recall, nor recalled: {@code count} for a bulk join. */
    public Event(String conv, long seq, String kind, String mid, String sender, String cmid, String body, long at, int count) {
        this(conv, seq, kind, mid, sender, cmid, body, at, count, 0, false);
    }

    /** Whether {@code kind} is an edit or a recall: an event that changes an earlier message ({@code ref}). */
    public static boolean isChange(String kind) {
        return EDIT.equals(kind) || RECALL.equals(kind);
    }
}
