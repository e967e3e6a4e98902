package im.store.directory;

/**
 * A device behind in one conversation, from {@link DirectoryListing#mostLagging}: its cursor
 * against the head it may see, and {@code behindMillis}, how long ago the first event after its
 * cursor was committed (how long the device has been missing something).
 */
public record LaggingDevice(String conv, DeviceCursor cursor, long behindMillis) {}
