package im.client.internal;

import im.client.api.ClientOptions;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The one retry rule of the SDK, shared by reconnects, outbox resends and the receive path's own
 * requests ({@code ack}, {@code sub}): how long to wait before retry {@code n} (exponential from
 * {@code reconnectMin}, capped at {@code reconnectMax}, with jitter), which errors refuse a request
 * for good, and when {@code INTERNAL} answers stop the retries ({@code maxInternalErrors}).
 */
final class RetryRule {
    private final long minMillis;
    private final long maxMillis;
    private final int maxInternalErrors;

    RetryRule(Duration min, Duration max, int maxInternalErrors) {
        this.minMillis = min.toMillis();
        this.maxMillis = max.toMillis();
        this.maxInternalErrors = maxInternalErrors;
    }

    static RetryRule of(ClientOptions o) {
        return new RetryRule(o.reconnectMin(), o.reconnectMax(), o.maxInternalErrors());
    }

    /** The wait before retry {@code attempt} (0-based): min * 2^attempt capped at max, "equal jitter" (half fixed, half random). */
    long backoffMillis(int attempt) {
        long base = (long) Math.min(maxMillis, minMillis * Math.pow(2, Math.min(attempt, 40)));
        long jittered = base / 2 + ThreadLocalRandom.current().nextLong(base / 2 + 1);
        return Math.max(minMillis, jittered);
    }

    /** True when {@code code} is counted against the cap: {@code INTERNAL} (UNAVAILABLE, RATE_LIMITED are transient and not capped). */
    static boolean counts(ErrorCode code) {
        return code == ErrorCode.INTERNAL;
    }

    /** True when a request answered {@code INTERNAL} this many times is given up. */
    boolean givesUpAfter(int internalErrors) {
        return internalErrors >= maxInternalErrors;
    }

    /**
     * True when the error is about the request itself, so repeating it unchanged fails again. Codes
     * about the connection (BAD_TOKEN, STALE_INSTALL, NOT_AUTHENTICATED) are not: the request was never judged.
     */
    static boolean refusesRequest(ErrorCode code) {
        return !code.retriable() && !code.closesConnection() && code != ErrorCode.NOT_AUTHENTICATED;
    }

    /** The error reported when a request is given up after its {@code internalErrors}th {@code INTERNAL}. */
    static ErrorFrame givenUp(ErrorFrame last, int internalErrors) {
        return new ErrorFrame(last.rid(), last.code(), last.msg() + " (answered INTERNAL " + internalErrors + " times; giving up)");
    }
}
