package im.client.api;

import java.io.IOException;

/**
 * No reply arrived within the timeout (of a send, an auth or a generic request). For a
 * send the outbox entry is kept: the message may or may not be committed, and a resend
 * with the same cmid resolves which.
 */
public class SendTimeoutException extends IOException {
    private static final long serialVersionUID = 1L;

    public SendTimeoutException(String message) {
        super(message);
    }
}
