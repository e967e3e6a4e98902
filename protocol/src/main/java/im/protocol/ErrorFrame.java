package im.protocol;

import java.util.Objects;

/**
 * {@code error}: a request failed with a stable {@link ErrorCode}. {@code rid} is null
 * (omitted on the wire) when the request's rid could not be read.
 */
public record ErrorFrame(String rid, ErrorCode code, String msg) implements ServerFrame {
    public ErrorFrame {
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(msg, "msg");
    }

    /** The error reply for a frame the codec rejected. */
    public static ErrorFrame of(ProtocolException e) {
        return new ErrorFrame(e.rid(), e.code(), e.getMessage() == null ? "" : e.getMessage());
    }
}
