package im.client.api;

import java.io.IOException;

/**
 * The client is not connected, or the connection ended before the reply arrived. For a
 * send the outbox entry is kept and is resent (same cmid) after the next (re)connect.
 */
public class ConnectionLostException extends IOException {
    private static final long serialVersionUID = 1L;

    public ConnectionLostException(String message) {
        super(message);
    }

    public ConnectionLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
