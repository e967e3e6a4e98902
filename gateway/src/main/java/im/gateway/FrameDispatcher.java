package im.gateway;

import im.cursor.CursorWriter;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;

/**
 * Turns decoded client frames into calls of the services and their results into reply frames.
 * Failed requests are answered through {@link ErrorMapper}, the one place where domain exceptions
 * become wire error codes. Database work runs on
 * the worker pool, never on an I/O thread.
 */
final class FrameDispatcher {
    private final FrameCodec codec = new FrameCodec();
    private final Directory directory;
    private final SendService sends;
    private final CursorWriter cursors;
    private final ReadPath reads;
    private final ExecutorService workers;
    private final Faults faults;
    private final GatewayConfig cfg;
    private final RequestMeters meters;

    FrameDispatcher(Directory directory, SendService sends, CursorWriter cursors, ReadPath reads,
                    ExecutorService workers, Faults faults, GatewayConfig cfg, RequestMeters meters) {
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
        } catch (RuntimeException e) {
            ErrorMapper.Answer a = ErrorMapper.answer(e, ErrorMapper.Door.SOCKET, "retry with the same cmid",
                    "frame " + frame.getClass().getSimpleName());
            if (frame instanceof Send) {
                switch (a.kind()) {
                    case REJECTED -> meters.rejected.increment();
                    case UNAVAILABLE -> meters.unavailable.increment();
                    case INTERNAL -> meters.error.increment();
                }
            }
            refuse(conn, rid, a.code(), a.message());
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
        long received = System.nanoTime();
        cursors.ack(conn.principal(), a.conv(), a.seq()).whenComplete((delivered, error) -> {
            try {
                if (error == null) {
                    if (!faults.shouldDrop(FaultPoint.GW_REPLY_ACK)) {
                        conn.reply(new Acked(a.rid(), a.conv(), delivered));
                        meters.ackedWritten(received);
                    }
                } else {
                    ErrorMapper.Answer r = ErrorMapper.answer(error, ErrorMapper.Door.SOCKET, "ack again", "ack");
                    refuse(conn, a.rid(), r.code(), r.message());
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
            // every refused auth closes the connection: an old install's token with 4003, any other with 4001
            ErrorCode code = e.errorCode() == ErrorCode.STALE_INSTALL ? ErrorCode.STALE_INSTALL : ErrorCode.BAD_TOKEN;
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
