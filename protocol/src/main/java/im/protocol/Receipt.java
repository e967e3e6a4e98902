package im.protocol;

/**
 * The receipt of one message ({@code seq}): of the {@code members} other than its sender who may
 * see it, {@code read} have read up to it (their read cursor is at or above it); of those members'
 * {@code devices}, {@code delivered} have stored it (their delivered cursor is at or above it).
 */
public record Receipt(long seq, long members, long read, long devices, long delivered) {
    public Receipt {
        if (read > members || delivered > devices || read < 0 || delivered < 0) {
            throw new IllegalArgumentException("receipt of " + seq + ": read " + read + " of " + members + ", delivered "
                    + delivered + " of " + devices);
        }
    }
}
