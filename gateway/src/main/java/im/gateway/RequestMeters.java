package im.gateway;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's send meters: {@code im.sends} counts every decoded {@code send} frame once, by
 * outcome ({@code sent}, {@code dup}, {@code rejected}: answered with a refusal such as NOT_MEMBER
 * or RATE_LIMITED, {@code unavailable}: database down or gateway overloaded, {@code error}:
 * INTERNAL); {@code im.sent.latency} times frame received to {@code sent} reply written, and
 * {@code im.acked.latency} {@code ack} frame received to {@code acked} reply written (the cursor
 * batch, the per-pair throttle's wait, the transaction and the cursor record's publish).
 * {@code im.changes} counts {@code edit} and {@code recall} frames (tag {@code kind}) by the same
 * outcomes but {@code unavailable} and {@code error}, which are {@code failed}; {@code im.typing}
 * counts {@code typing} frames as {@code published}, {@code throttled} (within
 * {@code IM_TYPING_INTERVAL_MS} of the last one passed on) or {@code refused}.
 */
final class RequestMeters {
    final Counter sent;
    final Counter dup;
    final Counter rejected;
    final Counter unavailable;
    final Counter error;
    /** im.typing by outcome, and im.changes by kind and outcome, registered once (typing frames come at typing pace). */
    private final java.util.Map<String, Counter> typingByOutcome = new java.util.HashMap<>();
    private final java.util.Map<String, Counter> changesByKindAndOutcome = new java.util.HashMap<>();
    private final Timer latency;
    private final Timer ackedLatency;

    RequestMeters(MeterRegistry meters, String gatewayId) {
        for (String outcome : java.util.List.of("published", "throttled", "refused")) {
            typingByOutcome.put(outcome, Counter.builder("im.typing").description("typing frames by outcome")
                    .tag("gateway", gatewayId).tag("outcome", outcome).register(meters));
        }
        for (String kind : java.util.List.of("edit", "recall")) {
            for (String outcome : java.util.List.of("sent", "dup", "rejected", "failed")) {
                changesByKindAndOutcome.put(kind + "/" + outcome, Counter.builder("im.changes").description("edit and recall frames by outcome")
                        .tag("gateway", gatewayId).tag("kind", kind).tag("outcome", outcome).register(meters));
            }
        }
        sent = outcome(meters, gatewayId, "sent");
        dup = outcome(meters, gatewayId, "dup");
        rejected = outcome(meters, gatewayId, "rejected");
        unavailable = outcome(meters, gatewayId, "unavailable");
        error = outcome(meters, gatewayId, "error");
        latency = Timer.builder("im.sent.latency").description("send frame received to sent reply written (new and dup)")
                .tag("gateway", gatewayId).publishPercentileHistogram().register(meters);
        ackedLatency = Timer.builder("im.acked.latency").description("ack frame received to acked reply written")
                .tag("gateway", gatewayId).publishPercentileHistogram().register(meters);
    }

    private static Counter outcome(MeterRegistry meters, String gatewayId, String outcome) {
        return Counter.builder("im.sends").description("send frames by outcome")
                .tag("gateway", gatewayId).tag("outcome", outcome).register(meters);
    }

    /** Counts a typing frame by its outcome: published, throttled or refused. */
    void typing(String outcome) {
        typingByOutcome.get(outcome).increment();
    }

    /** Counts an edit or a recall ({@code kind}) by its outcome: sent, dup, rejected or failed. */
    void change(String kind, String outcome) {
        changesByKindAndOutcome.get(kind + "/" + outcome).increment();
    }

    /** A {@code sent} reply was written for a frame received at {@code receivedNanos} ({@link System#nanoTime()}). */
    void sentWritten(long receivedNanos) {
        latency.record(System.nanoTime() - receivedNanos, TimeUnit.NANOSECONDS);
    }

    /** An {@code acked} reply was written for a frame received at {@code receivedNanos}. */
    void ackedWritten(long receivedNanos) {
        ackedLatency.record(System.nanoTime() - receivedNanos, TimeUnit.NANOSECONDS);
    }
}
