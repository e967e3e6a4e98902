package im.client.api;

/**
 * Where an {@link im.client.ImClient}'s connection is ({@link im.client.ImClient#state()}, {@link ClientListener#onStateChanged}):
 * {@code DISCONNECTED} (not connected; with {@code autoReconnect} after a lost connection, a reconnect
 * is scheduled with backoff) → {@code CONNECTING} (opening the WebSocket and authenticating) →
 * {@code CONNECTED} (authenticated) → {@code DISCONNECTED} again, and {@code CLOSED} once
 * {@link im.client.ImClient#close()} ran (final).
 */
public enum ConnectionState {
    DISCONNECTED,
    CONNECTING,
    CONNECTED,
    CLOSED
}
