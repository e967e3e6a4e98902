package im.store.directory;

import im.infra.identity.DevicePrincipal;
import java.time.Instant;

/**
 * A device token that authenticated: whose it is (with the install and credential numbers a
 * session compares with the device's current ones) and when it expires (null: never).
 */
public record AuthenticatedToken(DevicePrincipal principal, Instant expires) {
}
