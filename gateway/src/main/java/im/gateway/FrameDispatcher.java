package im.gateway;

import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.CatchUp;
import im.protocol.ClientFrame;
import im.protocol.Edit;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.FrameCodec;
import im.protocol.ProtocolException;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.Read;
import im.protocol.Recall;
import im.protocol.Receipts;
import im.protocol.Sub;
import im.protocol.Sync;
import im.protocol.Typing;
import im.store.cursor.CursorWriter;
import im.store.directory.AuthenticatedToken;
import im.store.directory.Directory;
import im.store.directory.DirectoryException;
import im.store.send.MessageChanges;
import im.store.send.SendResult;
import im.store.send.SendService;
import java.net.InetAddress;
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
    private final MessageChanges changes;
    private final TypingPath typing;
    private final CursorWriter cursors;
    private final ReadPath reads;
    private final ExecutorService workers;
    private final Faults faults;
    private final GatewayConfig cfg;
    private final RequestMeters meters;
    private final ConnectionLimits limits;
    private final Audit audit;

    FrameDispatcher(Directory directory, SendService sends, MessageChanges changes, TypingPath typing, CursorWriter cursors, ReadPath reads,
                    ExecutorService workers, Faults faults, GatewayConfig cfg, RequestMeters meters,
                    ConnectionLimits limits, Audit audit) {
        this.limits = limits;
        this.audit = audit;
        this.directory = directory;
        this.sends = sends;
        this.changes = changes;
        this.typing = typing;
        this.cursors = cursors;
        this.reads = reads;
        this.workers = workers;
        this.faults = faults;
        this.cfg = cfg;
        this.meters = meters;
    }

    /**
     * Called on an I/O thread with one complete text frame. Every frame takes a token of the
     * connection's rate limit, whether it decodes or not, so a flood of unparseable frames is
     * refused {@code RATE_LIMITED} like any other.
     */
    void onText(DeviceConnection conn, String text) {
        long received = System.nanoTime();
        boolean withinRate = conn.tryAcquireRate();
        ClientFrame frame;
        try {
            frame = codec.decodeClient(text);
        } catch (ProtocolException e) {
            conn.reply(withinRate ? ErrorFrame.of(e) : rateLimited(null));
            return;
        }
        if (!withinRate) {
            if (frame instanceof Send) meters.rejected.increment();
            conn.reply(rateLimited(frame.rid()));
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
        ErrorFrame ended = conn.sessionEnded();
        if (ended != null) {   // its token was renewed, revoked or expired: the close follows
            if (frame instanceof Send) meters.rejected.increment();
            conn.reply(new ErrorFrame(frame.rid(), ended.code(), ended.msg()));
            return;
        }
        if (!conn.tryBeginRequest(cfg.maxInflight())) {
            if (frame instanceof Auth) conn.failAuth();
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
        if (frame instanceof Read r) {
            read(conn, r);   // batched by the read writer; completes asynchronously
            return;
        }
        if (frame instanceof Sync || frame instanceof Sub || frame instanceof CatchUp) {
            // replies that can be large start only when the connection's held bytes leave room
            conn.withAllowance(allowance -> execute(conn, frame, received, allowance));
            return;
        }
        execute(conn, frame, received, 0);
    }

    private ErrorFrame rateLimited(String rid) {
        return new ErrorFrame(rid, ErrorCode.RATE_LIMITED, "more than " + cfg.rateLimitPerSecond() + " frames per second");
    }

    /** Runs a request on the worker pool; {@code allowance} (of {@link DeviceConnection#withAllowance}) is returned after. */
    private void execute(DeviceConnection conn, ClientFrame frame, long received, long allowance) {
        try {
            workers.execute(() -> {
                try {
                    handle(conn, frame, received, allowance);
                } finally {
                    conn.endRequest();
                    if (allowance > 0) conn.release(allowance);
                }
            });
        } catch (RejectedExecutionException e) {
            conn.endRequest();
            if (allowance > 0) conn.release(allowance);
            if (frame instanceof Auth) conn.failAuth();
            if (frame instanceof Send) meters.unavailable.increment();
            conn.reply(new ErrorFrame(frame.rid(), ErrorCode.UNAVAILABLE, "gateway overloaded, retry"));
        }
    }

    private void handle(DeviceConnection conn, ClientFrame frame, long received, long allowance) {
        String rid = frame.rid();
        try {
            if (frame instanceof Auth) {
                authenticate(conn, (Auth) frame);
            } else if (frame instanceof Send) {
                send(conn, (Send) frame, received);
            } else if (frame instanceof Edit e) {
                changed(conn, e.rid(), Event.EDIT,
                        () -> changes.edit(conn.principal(), e.conv(), e.cmid(), e.seq(), e.body()));
            } else if (frame instanceof Recall r) {
                changed(conn, r.rid(), Event.RECALL, () -> changes.recall(conn.principal(), r.conv(), r.cmid(), r.seq()));
            } else if (frame instanceof Receipts r) {
                conn.reply(reads.receipts(conn.principal(), r));
            } else if (frame instanceof Typing t) {
                ErrorFrame refused = typing.typing(conn, t);
                if (refused != null) conn.reply(refused);
            } else if (frame instanceof Sub) {
                conn.reply(reads.subscribe(conn, (Sub) frame));
            } else if (frame instanceof Sync) {
                conn.reply(reads.sync(conn.principal(), (Sync) frame, allowance));
            } else if (frame instanceof CatchUp) {
                conn.reply(reads.catchUp(conn.principal(), (CatchUp) frame, allowance));
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
            } else if (frame instanceof Edit || frame instanceof Recall) {
                meters.change(frame instanceof Edit ? Event.EDIT : Event.RECALL, a.kind() == ErrorMapper.Kind.REJECTED ? "rejected" : "failed");
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

    private void read(DeviceConnection conn, Read r) {
        reads.read(conn.principal(), r).whenComplete((answer, error) -> {
            try {
                if (error == null) {
                    conn.reply(answer);
                } else {
                    ErrorMapper.Answer a = ErrorMapper.answer(error, ErrorMapper.Door.SOCKET, "read again", "read");
                    refuse(conn, r.rid(), a.code(), a.message());
                }
            } finally {
                conn.endRequest();
            }
        });
    }

    private void authenticate(DeviceConnection conn, Auth auth) {
        InetAddress from = conn.address();
        if (!limits.mayAuthenticate(from, System.nanoTime())) {
            conn.failAuth();
            audit.authThrottled("socket", from);
            conn.replyAndClose(new ErrorFrame(auth.rid(), ErrorCode.RATE_LIMITED,
                    "too many failed authentications from this address; retry in a minute"),
                    ConnectionLimits.TRY_AGAIN_LATER, ErrorCode.RATE_LIMITED);
            return;
        }
        AuthenticatedToken p;
        try {
            p = directory.credential(auth.token());
        } catch (DirectoryException e) {
            if (e.code() == DirectoryException.Code.BAD_TOKEN) limits.failed(from, System.nanoTime());   // a guess, not an old install's token
            audit.authFailed("socket", from, e);
            conn.failAuth();
            // every refused auth closes the connection: an old install's token with 4003, any other with 4001
            ErrorCode code = e.errorCode() == ErrorCode.STALE_INSTALL ? ErrorCode.STALE_INSTALL : ErrorCode.BAD_TOKEN;
            conn.replyAndClose(new ErrorFrame(auth.rid(), code, e.getMessage()), code.closeStatus(), code);
            return;
        } catch (RuntimeException e) {
            conn.failAuth();
            throw e;
        }
        conn.endAuth(p);
        DevicePrincipal who = p.principal();
        ConnectionLimits.Admission admission = limits.admit(conn, who);
        if (!admission.admitted()) {
            conn.endSession(new ErrorFrame(auth.rid(), ErrorCode.RATE_LIMITED,
                    "user " + who.userId() + " holds " + cfg.maxConnectionsPerUser() + " connections on this gateway"),
                    ConnectionLimits.TRY_AGAIN_LATER);
            return;
        }
        if (admission.replaced() != null) {
            admission.replaced().closeWithGrace(ConnectionLimits.REPLACED_STATUS, "replaced by a newer connection of this device");
        }
        conn.reply(new Authed(auth.rid(), who.userId(), who.deviceId(), who.installEpoch()));
    }

    /** An edit or a recall ({@code kind}), answered {@code sent} like a send. */
    private void changed(DeviceConnection conn, String rid, String kind, java.util.function.Supplier<SendResult> change) {
        SendResult r = change.get();
        meters.change(kind, r.dup() ? "dup" : "sent");
        conn.reply(new Sent(rid, r.conv(), r.seq(), r.mid(), r.dup(), r.epoch()));
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
