package im.store.send;

import java.time.Instant;

/**
 * The committed outcome of a send: the event's seq and mid; {@code dup} is true when the cmid had
 * already been committed (a resend) and the original seq is returned. {@code epoch} is the
 * sender device's install epoch.
 */
public record SendResult(String conv, long seq, String mid, boolean dup, int epoch, Instant at) {}
