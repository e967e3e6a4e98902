package im.client.api;

/**
 * The gateway closed the connection with 4009: a newer connection of the same device took over
 * (the device opened more than the gateway's per-device limit). The client does not reconnect on
 * its own, since that would take the device back from the newer connection, which would then be
 * replaced in turn; {@link im.client.ImClient#connect()} takes it back on purpose (docs/protocol.md).
 */
public class ConnectionReplacedException extends ConnectionLostException {
    private static final long serialVersionUID = 1L;

    /** The WebSocket close status of a replaced connection. */
    public static final int STATUS = 4009;

    public ConnectionReplacedException(String message) {
        super(message);
    }
}
