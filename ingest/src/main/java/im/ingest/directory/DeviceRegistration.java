package im.ingest.directory;

/** A registered (or reinstalled) device and its token, which is shown once and stored only hashed. */
public record DeviceRegistration(String user, String device, int epoch, String token) {}
