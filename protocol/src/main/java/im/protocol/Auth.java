package im.protocol;

import java.util.Objects;

/** {@code auth}: the first frame of a connection; {@code token} is the device token. */
public record Auth(String rid, String token) implements ClientFrame {
    public Auth {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(token, "token");
    }

    /** Never print the token. */
    @Override
    public String toString() {
        return "Auth[rid=" + rid + ", token=<redacted>]";
    }
}
