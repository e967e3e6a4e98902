package im.read;

/** One event of a conversation log as stored; {@code cmid} is null for join/leave. */
public record StoredEvent(String conv, long seq, String kind, String mid, String sender, String cmid,
                          String body, long atMillis) {}
