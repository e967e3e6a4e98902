package im.gateway;

import im.cursor.AckRejectedException;
import im.cursor.CursorWriter;
import im.infra.db.DatabaseUnavailableException;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.ingest.SendRejectedException;
import im.ingest.SendResult;
import im.ingest.SendService;
import im.ingest.directory.Directory;
import im.ingest.directory.DirectoryException;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.FrameCodec;
import im.protocol.ProtocolException;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.Sub;
import im.protocol.Sync;
import im.read.ReadRejectedException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns decoded client frames into calls of the services and their results into reply frames.
 * This is the one place where domain exceptions become wire error codes. Database work runs on
 * the worker pool, never on an I/O thread.
 */
final class FrameDispatcher {
    private static final Logger log = LoggerFactory.getLogger(FrameDispatcher.class);

    private final FrameCodec codec = new FrameCodec();
    private final Directory directory;
    private final SendService sends;
    private final CursorWriter cursors;
    private final ReadPath reads;
    private final ExecutorService workers;
    private final Faults faults;
    private final GatewayConfig cfg;
    private final SendMeters meters;

    FrameDispatcher(Directory directory, SendService sends, CursorWriter cursors, ReadPath reads,
                    ExecutorService workers, Faults faults, GatewayConfig cfg, SendMeters meters) {
        this.directory = directory;
        this.sends = sends;
        this.cursors = cursors;
        this.reads = reads;
        this.workers = workers;
        this.faults = faults;
        this.cfg = cfg;
        this.meters = meters;
    }

    /** Called on an I/O thread with one complete text frame. */
    void onText(DeviceConnection conn, String text) {
        long received = System.nanoTime();
        ClientFrame frame;
        try {
            frame = codec.decodeClient(text);
        } catch (ProtocolException e) {
            conn.reply(ErrorFrame.of(e));
            return;
        }
        if (!conn.tryAcquireRate()) {
            if (frame instanceof Send) meters.rejected.increment();
            conn.reply(new ErrorFrame(frame.rid(), ErrorCode.RATE_LIMITED,
                    "more than " + cfg.rateLimitPerSecond() + " frames per second"));
            return;
        }
        if (frame instanceof Auth) {
            if (!conn.beginAuth()) {
                conn.reply(new ErrorFrame(frame.rid(), ErrorCode.ALREADY_AUTHENTICATED, "this connection is authenticated"));
                return;
            }
        } else if (conn.principal() == null) {
            if (frame instanceof Send) meters.rejected.increment();
            conn.reply(new ErrorFrame(frame.rid(), ErrorCode.NOT_AUTHENTICATED, "the first frame must be auth"));
            return;
        }
        if (!conn.tryBeginRequest(cfg.maxInflight())) {
            if (frame instanceof Auth) conn.endAuth(null);
            if (frame instanceof Send) meters.rejected.increment();
            conn.reply(new ErrorFrame(frame.rid(), ErrorCode.RATE_LIMITED,
                    "more than " + cfg.maxInflight() + " requests in flight"));
            return;
        }
        if (frame instanceof Ack) {
            if (faults.shouldDrop(FaultPoint.GW_ACK)) {
                conn.endRequest();    // lost on the way: nothing written, no reply
                return;
            }
            ack(conn, (Ack) frame);   // batched by the cursor writer; completes asynchronously
            return;
        }
        try {
            workers.execute(() -> {
                try {
                    handle(conn, frame, received);
                } finally {
                    conn.endRequest();
                }
            });
        } catch (RejectedExecutionException e) {
            conn.endRequest();
            if (frame instanceof Auth) conn.endAuth(null);
            if (frame instanceof Send) meters.unavailable.increment();
            conn.reply(new ErrorFrame(frame.rid(), ErrorCode.UNAVAILABLE, "gateway overloaded, retry"));
        }
    }

    private void handle(DeviceConnection conn, ClientFrame frame, long received) {
        String rid = frame.rid();
        try {
            if (frame instanceof Auth) {
                authenticate(conn, (Auth) frame);
            } else if (frame instanceof Send) {
                send(conn, (Send) frame, received);
            } else if (frame instanceof Sub) {
                conn.reply(reads.subscribe(conn, (Sub) frame));
            } else if (frame instanceof Sync) {
                conn.reply(reads.sync(conn.principal(), (Sync) frame));
            } else {
                conn.reply(new ErrorFrame(rid, ErrorCode.UNKNOWN_TYPE, "unsupported frame"));
            }
        } catch (SendRejectedException e) {
            meters.rejected.increment();
            refuse(conn, rid, ErrorCode.valueOf(e.reason().name()), e.getMessage());
        } catch (AckRejectedException e) {
            refuse(conn, rid, ErrorCode.valueOf(e.reason().name()), e.getMessage());
        } catch (ReadRejectedException e) {
            refuse(conn, rid, ErrorCode.valueOf(e.reason().name()), e.getMessage());
        } catch (DatabaseUnavailableException e) {
            log.warn("database unavailable: {}", e.getCause() == null ? e.getMessage() : e.getCause().getMessage());
            if (frame instanceof Send) meters.unavailable.increment();
            conn.reply(new ErrorFrame(rid, ErrorCode.UNAVAILABLE, "database unavailable, retry with the same cmid"));
        } catch (RuntimeException e) {
            log.error("frame {} failed", frame.getClass().getSimpleName(), e);
            if (frame instanceof Send) meters.error.increment();
            conn.reply(new ErrorFrame(rid, ErrorCode.INTERNAL, "internal error"));
        }
    }

    /**
     * Answers a refused request. A code that ends the session ({@code STALE_INSTALL}: the device
     * was reinstalled while this connection was open) also closes the connection with its status,
     * as after a refused {@code auth}: nothing more may be read or written on it.
     */
    private static void refuse(DeviceConnection conn, String rid, ErrorCode code, String msg) {
        ErrorFrame f = new ErrorFrame(rid, code, msg);
        if (code.closesConnection()) {
            conn.replyAndClose(f, code.closeStatus(), code);
        } else {
            conn.reply(f);
        }
    }

    private void ack(DeviceConnection conn, Ack a) {
        cursors.ack(conn.principal(), a.conv(), a.seq()).whenComplete((delivered, error) -> {
            try {
                if (error == null) {
                    if (!faults.shouldDrop(FaultPoint.GW_REPLY_ACK)) conn.reply(new Acked(a.rid(), a.conv(), delivered));
                } else if (error instanceof AckRejectedException) {
                    AckRejectedException e = (AckRejectedException) error;
                    refuse(conn, a.rid(), ErrorCode.valueOf(e.reason().name()), e.getMessage());
                } else if (error instanceof DatabaseUnavailableException) {
                    conn.reply(new ErrorFrame(a.rid(), ErrorCode.UNAVAILABLE, "database unavailable, ack again"));
                } else {
                    log.error("ack failed", error);
                    conn.reply(new ErrorFrame(a.rid(), ErrorCode.INTERNAL, "internal error"));
                }
            } finally {
                conn.endRequest();
            }
        });
    }

    private void authenticate(DeviceConnection conn, Auth auth) {
        DevicePrincipal p;
        try {
            p = directory.authenticate(auth.token());
        } catch (DirectoryException e) {
            conn.endAuth(null);
            ErrorCode code = e.code() == DirectoryException.Code.STALE_INSTALL ? ErrorCode.STALE_INSTALL : ErrorCode.BAD_TOKEN;
            conn.replyAndClose(new ErrorFrame(auth.rid(), code, e.getMessage()), code.closeStatus(), code);
            return;
        } catch (RuntimeException e) {
            conn.endAuth(null);
            throw e;
        }
        conn.endAuth(p);
        conn.reply(new Authed(auth.rid(), p.userId(), p.deviceId(), p.installEpoch()));
    }

    private void send(DeviceConnection conn, Send s, long received) {
        SendResult r = sends.send(conn.principal(), s.conv(), s.cmid(), s.body());
        (r.dup() ? meters.dup : meters.sent).increment();
        faults.maybeHalt(FaultPoint.API_AFTER_SEND_COMMIT);
        if (faults.shouldDrop(FaultPoint.GW_REPLY_SEND)) return;
        conn.reply(new Sent(s.rid(), r.conv(), r.seq(), r.mid(), r.dup(), r.epoch()));
        meters.sentWritten(received);
    }
}
