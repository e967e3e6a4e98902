package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ImErrorException;
import im.protocol.Ack;
import im.protocol.ClientFrame;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Sub;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Retries of the receive path's own requests against a gateway that keeps answering
 * {@code INTERNAL}: they back off exponentially (reconnect min/max, with jitter) instead of
 * hammering the server at a flat interval, and {@code INTERNAL} answers are capped like those of
 * an outbox entry ({@code maxInternalErrors}), then reported to the listener.
 */
class ImClientRetryBackoffTest {
    private static final Duration MIN = Duration.ofMillis(50);
    private static final Duration MAX = Duration.ofSeconds(5);
    private static final int ATTEMPTS = 5;

    @TempDir
    Path dir;

    @Test
    void ackAnsweredInternalIsRetriedWithExponentialBackoffThenGivenUp() throws Exception {
        String givenUp = retriedUntilGivenUp(Ack.class, report -> new ClientListener() {
            @Override
            public void onAckFailed(String conv, long seq, ImErrorException cause) {
                report.complete(conv + ":" + seq + ":" + cause.code());
            }
        });
        assertEquals("c-ab:1:INTERNAL", givenUp);
    }

    @Test
    void subAnsweredInternalIsRetriedWithExponentialBackoffThenGivenUp() throws Exception {
        String givenUp = retriedUntilGivenUp(Sub.class, report -> new ClientListener() {
            @Override
            public void onSubscribeFailed(ImErrorException cause) {
                report.complete(cause.code().toString());
            }
        });
        assertEquals("INTERNAL", givenUp);
    }

    /**
     * Runs a client against a gateway that answers every {@code failing} request {@code INTERNAL};
     * checks the spacing of the attempts, that the ATTEMPTS-th answer gives up and that no attempt
     * follows. Returns what the listener reported.
     */
    private String retriedUntilGivenUp(Class<? extends ClientFrame> failing,
                                       Function<CompletableFuture<String>, ClientListener> listener) throws Exception {
        CountDownLatch attempts = new CountDownLatch(ATTEMPTS + 1);
        CompletableFuture<String> report = new CompletableFuture<>();
        try (FakeGateway gw = new FakeGateway(f -> {
                    if (failing.isInstance(f)) {
                        attempts.countDown();
                        return new ErrorFrame(f.rid(), ErrorCode.INTERNAL, "boom");
                    }
                    return FakeGateway.oneUnstoredEvent(f);
                });
             ImClient client = ImClient.open(options(gw))) {
            client.addListener(listener.apply(report));
            client.connect();

            // Backoff from 50 ms: 5 attempts within ~1 s (a flat retry at reconnectMax, 5 s, needs 20 s).
            String reported = report.get(4, TimeUnit.SECONDS);
            assertEquals(ATTEMPTS, gw.received(failing).size(), "given up at the cap");
            assertBackoff(gaps(gw.received(failing)));
            assertFalse(attempts.await(MIN.toMillis() << ATTEMPTS, TimeUnit.MILLISECONDS), "no attempt after giving up");
            return reported;
        }
    }

    /** Retry k (0-based) waits at least half of min * 2^k ("equal jitter"), and never less than min. */
    private static void assertBackoff(List<Long> gapsMillis) {
        for (int k = 0; k < gapsMillis.size(); k++) {
            long lower = Math.max(MIN.toMillis(), (MIN.toMillis() << k) / 2);
            assertTrue(gapsMillis.get(k) >= lower - 2,
                    "retry " + k + " came after " + gapsMillis.get(k) + " ms, expected >= " + lower + " ms; all gaps: " + gapsMillis);
        }
    }

    private static List<Long> gaps(List<FakeGateway.Received> frames) {
        List<Long> out = new ArrayList<>();
        for (int i = 1; i < Math.min(frames.size(), ATTEMPTS); i++) {
            out.add(TimeUnit.NANOSECONDS.toMillis(frames.get(i).atNanos() - frames.get(i - 1).atNanos()));
        }
        return out;
    }

    private ClientOptions options(FakeGateway gw) throws IOException {
        return ClientOptions.of(gw.uri(), "tok-1", dir).withReconnectBackoff(MIN, MAX).withMaxInternalErrors(ATTEMPTS);
    }
}
