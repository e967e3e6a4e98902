package im.store.directory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Device tokens: 256 random bits, shown once at registration, stored only as SHA-256. A lookup by
 * hash needs no constant-time comparison: an attacker cannot steer the hash of a guess.
 */
final class Tokens {
    private static final SecureRandom RANDOM = new SecureRandom();
    static final String PREFIX = "imt_";

    private Tokens() {}

    static String newToken() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    static byte[] hash(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always present", e);
        }
    }
}
