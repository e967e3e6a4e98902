package im.store.cursor;

import im.infra.identity.DevicePrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Group commit for acks ({@link GroupCommit}): concurrent acks (from many devices) are written by
 * {@link CursorService#ackBatch} in one transaction, and acks of the same device and conversation
 * collapse into one row write.
 *
 * <p>With a throttle, one (device, conversation) pair is written at most once per interval. A
 * device acking a busy conversation (the SDK keeps one ack in flight per conversation) therefore
 * costs one row, one WAL record and one cursor record per interval instead of one per push; each
 * ack is still answered only once its cursor is written.
 */
public final class CursorWriter implements AutoCloseable {
    private final GroupCommit<AckRequest, Long> commit;

    public CursorWriter(CursorService service, Duration maxDelay, int maxBatch, int threads) {
        this(service, maxDelay, maxBatch, threads, Duration.ZERO);
    }

    /** @param throttle least time between two writes of one (device, conversation); zero: none */
    public CursorWriter(CursorService service, Duration maxDelay, int maxBatch, int threads, Duration throttle) {
        this.commit = new GroupCommit<>("cursor", acks -> outcomes(service.ackBatch(acks)), AckRequest::pair,
                maxDelay, maxBatch, threads, throttle);
    }

    // An ack can reach us before the send it acknowledges is visible to a new snapshot; the
    // service's check waits for such a send (CursorService.RECHECK), so nothing is retried here.
    private static List<GroupCommit.Outcome<Long>> outcomes(List<CursorService.Outcome> acks) {
        List<GroupCommit.Outcome<Long>> out = new ArrayList<>(acks.size());
        for (CursorService.Outcome o : acks) {
            out.add(o.rejected() == null ? GroupCommit.Outcome.of(o.delivered()) : GroupCommit.Outcome.refused(o.rejected()));
        }
        return out;
    }

    public CursorWriter start() {
        commit.start();
        return this;
    }

    /** Queues an ack; the future completes with the merged cursor or an {@link AckRejectedException}. */
    public CompletableFuture<Long> ack(DevicePrincipal who, String conv, long seq) {
        return commit.submit(new AckRequest(who, conv, seq));
    }

    /** Acks the throttle made wait (each counted once). */
    public long heldAcks() {
        return commit.held();
    }

    /** Acks received. */
    public long acks() {
        return commit.requests();
    }

    /** Transactions that wrote cursors (each one upsert of the batch's distinct rows). */
    public long transactions() {
        return commit.transactions();
    }

    @Override
    public void close() {
        commit.close();
    }
}
