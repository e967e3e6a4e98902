package im.client.internal;

import im.client.api.ConnectionLostException;
import im.client.api.ImErrorException;
import im.client.api.SendTimeoutException;
import im.protocol.Acked;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ErrorFrame;
import im.protocol.Edit;
import im.protocol.Recall;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Subbed;
import im.protocol.Synced;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Request/reply matching of one connection: the requests written and not yet answered, by rid.
 * A reply (or error) carrying a pending rid completes that request; any other frame is a push
 * (event, hint) or a stray late reply.
 */
final class PendingRequests {
    /**
     * One awaited reply; {@code cmid} is set for a request of the outbox's kinds ({@code send},
     * {@code edit}, {@code recall}), {@code outboxEntry} when it is an outbox attempt.
     */
    record Pending(CompletableFuture<ServerFrame> future, String cmid, boolean outboxEntry) {
    }

    private final ConcurrentHashMap<String, Pending> byRid = new ConcurrentHashMap<>();

    /** Request ids unique within one client instance. */
    static final class Rids {
        private final AtomicLong counter = new AtomicLong();

        String next() {
            return "r" + counter.incrementAndGet();
        }
    }

    /** False if a request with the same rid is still pending. */
    boolean register(ClientFrame frame, boolean outboxEntry, CompletableFuture<ServerFrame> future) {
        String cmid = frame instanceof Send s ? s.cmid() : frame instanceof Edit e ? e.cmid() : frame instanceof Recall r ? r.cmid() : null;
        return byRid.putIfAbsent(frame.rid(), new Pending(future, cmid, outboxEntry)) == null;
    }

    void remove(String rid) {
        byRid.remove(rid);
    }

    /** The request {@code reply} answers, removed; null when it answers none (a push or a late reply). */
    Pending take(ServerFrame reply) {
        String rid = replyRid(reply);
        return rid == null ? null : byRid.remove(rid);
    }

    void failAll(IOException cause) {
        for (String rid : byRid.keySet()) {
            Pending p = byRid.remove(rid);
            if (p != null) {
                p.future().completeExceptionally(cause);
            }
        }
    }

    private static String replyRid(ServerFrame f) {
        if (f instanceof Authed a) {
            return a.rid();
        } else if (f instanceof Sent s) {
            return s.rid();
        } else if (f instanceof Acked a) {
            return a.rid();
        } else if (f instanceof im.protocol.ReadAck r) {
            return r.rid();
        } else if (f instanceof Subbed s) {
            return s.rid();
        } else if (f instanceof Synced s) {
            return s.rid();
        } else if (f instanceof im.protocol.ReceiptsReply r) {
            return r.rid();
        } else if (f instanceof im.protocol.CaughtUp c) {
            return c.rid();
        } else if (f instanceof ErrorFrame e) {
            return e.rid();
        }
        return null; // event, hint
    }

    /** Waits for a reply, translating failures into the SDK's exceptions (new ones, so the trace shows the caller). */
    static <T> T await(CompletableFuture<T> fut, Duration timeout, String what) throws IOException {
        try {
            return fut.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new SendTimeoutException("no reply to " + what + " within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for the reply to " + what);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof ImErrorException ie) {
                throw new ImErrorException(ie.frame());
            }
            if (c instanceof ConnectionLostException cl) {
                throw new ConnectionLostException(cl.getMessage() + " (waiting for the reply to " + what + ")", cl);
            }
            if (c instanceof RuntimeException re) {
                throw re;
            }
            throw new IOException("request failed: " + what, c);
        }
    }
}
