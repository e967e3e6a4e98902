package im.client.api;

import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import java.io.IOException;
import java.util.Objects;

/**
 * The server answered a request with an {@code error} frame (or closed the connection with
 * a terminal close code, or the client rejected the request locally with the code the server
 * would have used). {@link #code()} says whether retrying can help:
 * {@link ErrorCode#retriable()}.
 */
public class ImErrorException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient ErrorFrame frame;

    public ImErrorException(ErrorFrame frame) {
        super(frame.code().wire() + (frame.rid() == null ? "" : " (rid " + frame.rid() + ")")
                + (frame.msg().isEmpty() ? "" : ": " + frame.msg()));
        this.frame = Objects.requireNonNull(frame, "frame");
    }

    public ImErrorException(ErrorCode code, String rid, String msg) {
        this(new ErrorFrame(rid, code, msg == null ? "" : msg));
    }

    /** The stable error code. */
    public ErrorCode code() {
        return frame.code();
    }

    /** The request id the error answers; null when the server could not read it or the error is local. */
    public String rid() {
        return frame.rid();
    }

    /** The error frame (synthesized for close codes and local validation). */
    public ErrorFrame frame() {
        return frame;
    }
}
