package im.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A bare WebSocket for tests that need to send arbitrary frames and read raw replies. */
public final class RawSocket implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final BlockingQueue<String> texts = new LinkedBlockingQueue<>();
    public final CompletableFuture<Integer> closed = new CompletableFuture<>();
    private final WebSocket ws;

    public RawSocket(URI uri) throws Exception {
        this(uri, HttpClient.newHttpClient());
    }

    /** Through {@code http}'s settings (e.g. the TLS context of a {@code wss} URI). */
    public RawSocket(URI uri, HttpClient http) throws Exception {
        ws = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(5))
                .buildAsync(uri, new WebSocket.Listener() {
                    private final StringBuilder buf = new StringBuilder();

                    @Override
                    public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                        buf.append(data);
                        if (last) {
                            texts.add(buf.toString());
                            buf.setLength(0);
                        }
                        w.request(1);
                        return null;
                    }

                    @Override
                    public CompletionStage<?> onClose(WebSocket w, int status, String reason) {
                        closed.complete(status);
                        return null;
                    }

                    @Override
                    public void onError(WebSocket w, Throwable error) {
                        closed.complete(-1);
                    }
                }).get(10, TimeUnit.SECONDS);
    }

    public void send(String text) throws Exception {
        ws.sendText(text, true).get(10, TimeUnit.SECONDS);
    }

    public void sendBinary(byte[] data) throws Exception {
        ws.sendBinary(ByteBuffer.wrap(data), true).get(10, TimeUnit.SECONDS);
    }

    public JsonNode next() throws Exception {
        String s = texts.poll(10, TimeUnit.SECONDS);
        if (s == null) throw new AssertionError("no frame within 10 s");
        return JSON.readTree(s);
    }

    /** The next frame within {@code wait}, or null. */
    public JsonNode poll(java.time.Duration wait) throws Exception {
        String s = texts.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
        return s == null ? null : JSON.readTree(s);
    }

    public JsonNode request(String text) throws Exception {
        send(text);
        return next();
    }

    public int awaitClose() throws Exception {
        return closed.get(10, TimeUnit.SECONDS);
    }

    public JsonNode auth(String token) throws Exception {
        return request("{\"t\":\"auth\",\"rid\":\"a1\",\"token\":\"" + token + "\"}");
    }

    @Override
    public void close() {
        ws.abort();
    }
}
