package im.protocol;

import java.util.Objects;

/**
 * {@code recall}: take back the sender's own message at {@code seq} in {@code conv}. Appended to
 * the log as an event of kind {@link Event#RECALL}; from its commit on, the message's body (and
 * its edits') is gone from every read path. Answered with {@link Sent} like a send; recalling a
 * message that is already recalled answers the first recall ({@code dup: true}).
 */
public record Recall(String rid, String conv, String cmid, long seq) implements ClientFrame {
    public Recall {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(cmid, "cmid");
    }
}
