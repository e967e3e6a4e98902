package im.client.api;

/**
 * The server's confirmation that a message is committed: {@code seq} and {@code mid} are
 * the event's. {@code dup} is true when the cmid had already been stored (a resend of a
 * message whose first reply was lost); {@code seq}/{@code mid} are then the original ones.
 */
public record SentAck(String conv, String cmid, long seq, String mid, boolean dup, int epoch) {
}
