package im.gateway;

/** Per-connection frame rate limit: {@code rate} tokens per second, bursts up to {@code 2 * rate}. */
final class TokenBucket {
    private final double ratePerNano;
    private final double capacity;
    private double tokens;
    private long last;

    TokenBucket(int ratePerSecond, long nowNanos) {
        this.ratePerNano = ratePerSecond / 1e9;
        this.capacity = 2.0 * ratePerSecond;
        this.tokens = capacity;
        this.last = nowNanos;
    }

    synchronized boolean tryTake(long nowNanos) {
        tokens = Math.min(capacity, tokens + (nowNanos - last) * ratePerNano);
        last = nowNanos;
        if (tokens < 1) return false;
        tokens -= 1;
        return true;
    }
}
