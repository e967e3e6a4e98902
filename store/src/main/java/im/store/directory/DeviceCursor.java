package im.store.directory;

/**
 * One device's delivery cursor in a conversation. {@code visibleHead} is the last seq the device's
 * user can see: the conversation head for a current member, the seq of the last leave for a former
 * one. {@code delivered} is the device's acked cursor (0 before its first ack); {@code updatedMillis}
 * is when it last moved (null before the first ack).
 */
public record DeviceCursor(String user, String device, boolean member, long visibleHead, long delivered, Long updatedMillis) {
    /** How many seqs the device has still to store and ack: visible head minus cursor, never negative. */
    public long lag() {
        return Math.max(0, visibleHead - delivered);
    }
}
