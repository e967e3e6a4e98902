package im.store.read;

/**
 * A conversation listed by {@code sub}: its head, this device's delivered cursor, the seq from
 * which the user sees events (the join event of their latest membership), and whether the user is
 * still a member ({@code false}: they left, and this device has not acknowledged the leave yet;
 * it catches up by sync, and gets no pushes for the conversation).
 */
public record ConvCursor(String conv, long head, long delivered, long fromSeq, boolean member) {}
