package im.gateway;

import im.infra.db.DatabaseUnavailableException;
import im.infra.error.RejectedException;
import im.protocol.ErrorCode;
import im.store.directory.DirectoryException;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one translation of a failed request into what a front door answers: the WebSocket
 * ({@link FrameDispatcher}), the client HTTP API ({@link ClientApi}) and the admin HTTP API
 * ({@link AdminApi}). A service's {@link RejectedException} is answered with the code it carries,
 * except that the device-facing doors answer {@code UNKNOWN_CONV} and {@code NOT_MEMBER} alike
 * ({@code NOT_MEMBER}, one message: no oracle of which conversations exist);
 * {@link DatabaseUnavailableException} with {@code UNAVAILABLE}; anything else is a bug, logged
 * and answered {@code INTERNAL}. The HTTP status of every code is declared here once, by an
 * exhaustive switch, so a new {@link ErrorCode} does not compile until it has one.
 */
final class ErrorMapper {
    private static final Logger log = LoggerFactory.getLogger(ErrorMapper.class);

    private ErrorMapper() {
    }

    /** Which front door answers; only the admin API speaks the directory's finer codes. */
    enum Door { SOCKET, CLIENT_HTTP, ADMIN_HTTP }

    /** What kind of failure it was, for the send outcome meters. */
    enum Kind { REJECTED, UNAVAILABLE, INTERNAL }

    /**
     * The answer to a failed request.
     *
     * @param code    the wire code (the {@code error} frame's {@code code})
     * @param name    the HTTP APIs' {@code error} field: the wire code, or on the admin API a
     *                directory refusal's own code ({@code ALREADY_EXISTS}, {@code NOT_FOUND}, ...)
     * @param status  the HTTP status
     * @param message the human-readable {@code msg}
     */
    record Answer(ErrorCode code, String name, int status, String message, Kind kind) {
    }

    /**
     * Maps a failure of a request (a {@link CompletionException} by its cause: a request answered
     * through a future, as an ack or a read is).
     *
     * @param retry what the client should do when the database is unavailable, e.g. "retry"
     * @param what  the request, for the log line of an unexpected failure
     */
    static Answer answer(Throwable e, Door door, String retry, String what) {
        if (e instanceof CompletionException && e.getCause() != null) e = e.getCause();
        if (e instanceof DirectoryException d && door == Door.ADMIN_HTTP) {
            return new Answer(d.errorCode(), d.code().name(), adminStatus(d.code()), d.getMessage(), Kind.REJECTED);
        }
        if (e instanceof RejectedException r) {
            ErrorCode c = r.errorCode();
            if (door != Door.ADMIN_HTTP && (c == ErrorCode.UNKNOWN_CONV || c == ErrorCode.NOT_MEMBER)) {
                // one answer to a device for both, so that an outsider cannot tell which conversations exist
                c = ErrorCode.NOT_MEMBER;
                return new Answer(c, c.wire(), httpStatus(c), "not a member of this conversation (or no such conversation)", Kind.REJECTED);
            }
            return new Answer(c, c.wire(), httpStatus(c), r.getMessage(), Kind.REJECTED);
        }
        if (e instanceof DatabaseUnavailableException) {
            log.warn("{}: database unavailable: {}", what, e.getCause() == null ? e.getMessage() : e.getCause().getMessage());
            ErrorCode c = ErrorCode.UNAVAILABLE;
            return new Answer(c, c.wire(), httpStatus(c), "database unavailable, " + retry, Kind.UNAVAILABLE);
        }
        log.error("{} failed", what, e);
        ErrorCode c = ErrorCode.INTERNAL;
        return new Answer(c, c.wire(), httpStatus(c), "internal error", Kind.INTERNAL);
    }

    /**
     * The HTTP status answering a code. Retriable codes get 429 or 5xx, terminal ones 4xx, so an
     * HTTP client that only looks at the status classifies them as the WebSocket table does.
     */
    static int httpStatus(ErrorCode code) {
        return switch (code) {
            case BAD_JSON, UNKNOWN_TYPE, MISSING_FIELD, BAD_FIELD, BAD_UTF8 -> 400;
            case BODY_TOO_LARGE, FRAME_TOO_LARGE -> 413;
            case BINARY_UNSUPPORTED -> 415;
            case NOT_AUTHENTICATED, BAD_TOKEN -> 401;
            case STALE_INSTALL -> 401;   // as for the token of an old install: the reinstall committed meanwhile
            case NOT_MEMBER, NOT_SENDER, TOO_LATE -> 403;
            case UNKNOWN_CONV, NOT_A_MESSAGE -> 404;
            case ALREADY_AUTHENTICATED, CMID_CONFLICT, CURSOR_AHEAD, RECALLED -> 409;
            case RATE_LIMITED -> 429;
            case INTERNAL -> 500;
            case UNAVAILABLE -> 503;
        };
    }

    /** The admin API's status of a directory refusal (docs/operations.md, admin API errors). */
    static int adminStatus(DirectoryException.Code code) {
        return switch (code) {
            case NOT_FOUND, NOT_MEMBER -> 404;
            case ALREADY_EXISTS, GROUP_FULL -> 409;
            case BAD_TOKEN, STALE_INSTALL -> 401;
            case INVALID -> 400;
        };
    }
}
