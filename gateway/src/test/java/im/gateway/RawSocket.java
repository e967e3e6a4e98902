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
    /** Frames {@link #request} read while it waited for its answer, for the next {@link #next}/{@link #poll}. */
    private final java.util.concurrent.ConcurrentLinkedQueue<JsonNode> passedOver = new java.util.concurrent.ConcurrentLinkedQueue<>();
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
        JsonNode f = poll(Duration.ofSeconds(10));
        if (f == null) throw new AssertionError("no frame within 10 s");
        return f;
    }

    /** The next frame within {@code wait}, or null: first those {@link #request} passed over. */
    public JsonNode poll(java.time.Duration wait) throws Exception {
        JsonNode held = passedOver.poll();
        if (held != null) return held;
        String s = texts.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
        return s == null ? null : JSON.readTree(s);
    }

    /**
     * Sends {@code text} and returns its answer: the first frame carrying its {@code rid}, or an
     * {@code error} without one (the answer to a frame whose rid could not be read). Frames that come
     * before it and are no answer (pushes: an event, hint, unread or typing may arrive at any time
     * after a {@code sub}) are kept, in order, for {@link #next} and {@link #poll}. A request without
     * a readable rid gets the next frame.
     */
    public JsonNode request(String text) throws Exception {
        String rid = null;
        try {
            JsonNode r = JSON.readTree(text).path("rid");
            if (r.isTextual()) rid = r.textValue();
        } catch (Exception notJson) {
            // a deliberately broken frame: its answer is the next frame
        }
        send(text);
        if (rid == null) return next();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        java.util.List<JsonNode> skipped = new java.util.ArrayList<>();
        while (true) {
            long left = deadline - System.nanoTime();
            String s = left > 0 ? texts.poll(left, TimeUnit.NANOSECONDS) : null;
            if (s == null) {
                passedOver.addAll(skipped);
                throw new AssertionError("no answer to rid " + rid + " within 10 s; other frames: " + skipped);
            }
            JsonNode f = JSON.readTree(s);
            boolean answer = rid.equals(f.path("rid").asText(null)) || ("error".equals(f.path("t").asText()) && !f.has("rid"));
            if (answer) {
                passedOver.addAll(skipped);
                return f;
            }
            skipped.add(f);
        }
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
