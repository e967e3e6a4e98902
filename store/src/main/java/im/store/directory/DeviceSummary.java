package im.store.directory;

/** A registered device as the admin API lists it (never its token); times in epoch milliseconds. */
public record DeviceSummary(String user, String device, int epoch, long createdMillis, long updatedMillis,
                            Long tokenExpiresMillis) {}
