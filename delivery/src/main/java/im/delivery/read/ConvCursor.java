package im.delivery.read;

/**
 * A conversation the user is a member of: its head, this device's delivered cursor, and the seq
 * from which the user sees events (their current membership's join event).
 */
public record ConvCursor(String conv, long head, long delivered, long fromSeq) {}
