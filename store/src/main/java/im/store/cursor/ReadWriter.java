package im.store.cursor;

import im.infra.identity.DevicePrincipal;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Group commit for reads ({@link GroupCommit}), as {@link CursorWriter} is for acks: concurrent
 * reads are written by {@link ReadCursors#markReads} in one transaction on the writer threads, so
 * reads hold at most that many database connections and never the gateway's worker pool, and
 * reads of one user's devices in one conversation collapse into one row write.
 *
 * <p>With a throttle, one (user, conversation) row is written at most once per interval: a user
 * reading a busy conversation as it scrolls costs one row write, one WAL record and one cursor
 * record per interval, however often its devices ask. Each read is answered once its row is written.
 */
public final class ReadWriter implements AutoCloseable {
    private final GroupCommit<ReadCursors.ReadRequest, ReadCursors.Marked> commit;

    /** @param throttle least time between two writes of one (user, conversation); zero: none */
    public ReadWriter(ReadCursors reads, Duration maxDelay, int maxBatch, int threads, Duration throttle) {
        this.commit = new GroupCommit<>("read", reads::markReads, ReadCursors.ReadRequest::row, maxDelay, maxBatch, threads, throttle);
    }

    public ReadWriter start() {
        commit.start();
        return this;
    }

    /**
     * Queues a read; the future completes with the read state after it (as
     * {@link ReadCursors#markRead} answers) or an {@link AckRejectedException}.
     */
    public CompletableFuture<ReadCursors.Marked> read(DevicePrincipal who, String conv, long seq) {
        return commit.submit(new ReadCursors.ReadRequest(who, conv, seq));
    }

    /** Reads the throttle made wait (each counted once). */
    public long held() {
        return commit.held();
    }

    /** Reads written (answered or refused). */
    public long reads() {
        return commit.requests();
    }

    /** Transactions that wrote reads. */
    public long transactions() {
        return commit.transactions();
    }

    @Override
    public void close() {
        commit.close();
    }
}
