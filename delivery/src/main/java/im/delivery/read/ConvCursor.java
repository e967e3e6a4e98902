package im.delivery.read;

/** A conversation the user is a member of: its head and this device's delivered cursor. */
public record ConvCursor(String conv, long head, long delivered) {}
