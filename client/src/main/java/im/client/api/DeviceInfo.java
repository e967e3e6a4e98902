package im.client.api;

/** Who the server says this connection is: the user, the device and its install epoch (from {@code authed}). */
public record DeviceInfo(String user, String device, int epoch) {
}
