package im.protocol;

import java.util.Objects;

/** {@code authed}: the token was accepted; names the user, device and install epoch it is bound to. */
public record Authed(String rid, String user, String device, int epoch) implements ServerFrame {
    public Authed {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(device, "device");
    }
}
