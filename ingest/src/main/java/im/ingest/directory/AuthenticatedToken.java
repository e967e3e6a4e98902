package im.ingest.directory;

import im.infra.identity.DevicePrincipal;
import java.time.Instant;

/**
 * A device token that authenticated: whose it is, its SHA-256 hash (what the directory stores;
 * a session compares it with the device's current one to notice a renewal or revocation; never
 * logged) and when it expires (null: never).
 */
public record AuthenticatedToken(DevicePrincipal principal, byte[] tokenHash, Instant expires) {
}
