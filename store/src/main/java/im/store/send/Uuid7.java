package im.store.send;

import java.security.SecureRandom;
import java.time.Clock;
import java.util.UUID;

/** UUID version 7 (RFC 9562): time-ordered, so event mids are inserted near each other in the index. */
final class Uuid7 {
    private static final SecureRandom RANDOM = new SecureRandom();

    private Uuid7() {}

    static UUID next(Clock clock) {
        long ms = clock.millis();
        long rand = RANDOM.nextLong();
        long msb = (ms << 16) | 0x7000L | ((rand >>> 52) & 0x0FFFL);
        long lsb = (RANDOM.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }
}
