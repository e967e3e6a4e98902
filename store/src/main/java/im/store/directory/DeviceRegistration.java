package im.store.directory;

import java.time.Instant;

/**
 * A registered (or reinstalled, or renewed) device and its token, which is shown once and stored
 * only hashed. {@code expires} is when the token stops working; null when tokens never expire.
 */
public record DeviceRegistration(String user, String device, int epoch, String token, Instant expires) {}
