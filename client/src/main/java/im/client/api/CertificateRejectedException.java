package im.client.api;

/**
 * The TLS handshake with a {@code wss://} gateway failed because the client did not accept the
 * gateway's certificate: it is not signed by a trusted CA (the {@link ClientOptions#caFile()}, else
 * the JVM's trust store), it has expired, or it was issued for another host name than the uri's.
 * Not retried: {@link im.client.ImClient#connect()} throws it, and an automatic reconnect that meets it stops
 * reconnecting (the listeners get it as the cause of the disconnect). Call {@code connect()} again
 * once the trust or the gateway's certificate is fixed.
 */
public class CertificateRejectedException extends ConnectionLostException {
    private static final long serialVersionUID = 1L;

    public CertificateRejectedException(String message, Throwable cause) {
        super(message, cause);
    }
}
