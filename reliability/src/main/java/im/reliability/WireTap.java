package im.reliability;

import im.protocol.Authed;
import im.protocol.CatchUp;
import im.protocol.CaughtUp;
import im.protocol.ClientFrame;
import im.protocol.FrameCodec;
import im.protocol.ProtocolException;
import im.protocol.ServerFrame;
import im.protocol.Sync;
import im.protocol.Synced;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay between one device's SDK and a gateway that records every WebSocket message the
 * server sends to that device, as the device receives it. Bytes are forwarded unchanged in both
 * directions (handshake, frames, close codes); both streams are parsed on the side (server frames
 * are unmasked, client frames masked, and the JDK client negotiates no extension). Of the client's
 * frames only when each {@code sync} and {@code catchup} request left is kept, so that the
 * {@code synced} or {@code caughtup} answering it (same rid, same connection) carries the time its
 * request was sent: a rule about what a read served after some moment needs it. A gateway killed or
 * frozen looks the same to the SDK as without the tap: a reset upstream resets the device's
 * socket, a frozen upstream forwards nothing.
 *
 * <p>This is how the campaign observes {@code acked}, {@code subbed}, {@code synced} and
 * {@code event} frames without a hook in the SDK: what the checker judges is what was on the wire.
 */
final class WireTap implements AutoCloseable {
    private static final FrameCodec CODEC = new FrameCodec();

    /**
     * Receives each decoded server frame with the install epoch of its connection (from {@code authed}),
     * when it arrived and, for a {@code synced} or {@code caughtup}, when its request was sent (0 otherwise).
     */
    interface Sink {
        void frame(int epoch, ServerFrame frame, long atMillis, long requestAtMillis);

        /**
         * A text frame the codec refused (also recorded in {@link #problems}): a sink may still read
         * what it needs from the raw JSON, e.g. a negative count the codec rejects.
         */
        default void undecodable(int epoch, String text, long atMillis) {}
    }

    private final String name;
    private final InetSocketAddress upstream;
    private final Sink sink;
    private final ServerSocket server;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    final List<String> problems = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    WireTap(String name, InetSocketAddress upstream, Sink sink) throws IOException {
        this.name = name;
        this.upstream = upstream;
        this.sink = sink;
        this.server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        daemon("tap-accept-" + name, this::acceptLoop).start();
    }

    /** The URI the device connects to instead of the gateway's. */
    URI uri() {
        return URI.create("ws://127.0.0.1:" + server.getLocalPort() + "/ws");
    }

    private void acceptLoop() {
        while (!closed) {
            Socket down;
            try {
                down = server.accept();
            } catch (IOException e) {
                return;
            }
            Socket up = new Socket();
            try {
                up.connect(upstream, 2000);
            } catch (IOException e) {
                reset(down);   // as if the gateway refused the connection
                continue;
            }
            try {
                down.setTcpNoDelay(true);
                up.setTcpNoDelay(true);
            } catch (IOException e) {
                // only latency
            }
            open.add(down);
            open.add(up);
            Map<String, Long> requests = new ConcurrentHashMap<>();   // rid -> when the read request left, this connection
            daemon("tap-up-" + name, () -> parseRequests(down, up, requests)).start();
            daemon("tap-down-" + name, () -> parse(up, down, requests)).start();
        }
    }

    /** Client to server: forwards every byte as it is read, and notes when each read request ({@code sync}, {@code catchup}) left. */
    private void parseRequests(Socket down, Socket up, Map<String, Long> requests) {
        relay(down, up, (text, at) -> {
            if (!text.contains("\"sync\"") && !text.contains("\"catchup\"")) return;
            ClientFrame f;
            try {
                f = CODEC.decodeClient(text);
            } catch (ProtocolException e) {
                return;   // the server answers it with an error; no read to time
            }
            if (f instanceof Sync s) requests.put(s.rid(), at);
            else if (f instanceof CatchUp c) requests.put(c.rid(), at);
        });
    }

    /** Server to client: forwards every byte as it is read, and decodes the WebSocket messages on the way. */
    private void parse(Socket up, Socket down, Map<String, Long> requests) {
        int[] epoch = {0};
        relay(up, down, (s, at) -> {
            ServerFrame f;
            try {
                f = CODEC.decodeServer(s);
            } catch (ProtocolException e) {
                problems.add(name + ": server frame that does not decode: " + e.getMessage());
                sink.undecodable(epoch[0], s, at);
                return;
            }
            if (f instanceof Authed a) epoch[0] = a.epoch();
            String rid = f instanceof Synced sy ? sy.rid() : f instanceof CaughtUp c ? c.rid() : null;
            Long requestAt = rid == null ? null : requests.remove(rid);
            sink.frame(epoch[0], f, at, requestAt == null ? 0 : requestAt);
        });
    }

    /** What a direction does with each complete text message, stamped when its last byte was read. */
    private interface TextHandler {
        void text(String text, long atMillis);
    }

    /**
     * Copies {@code from} to {@code to} byte for byte and hands each complete text message to
     * {@code handler} on the way (after its bytes were forwarded); the end of either side ends both.
     */
    private void relay(Socket from, Socket to, TextHandler handler) {
        boolean reset = false;
        try {
            OutputStream out = to.getOutputStream();
            DataInputStream in = new DataInputStream(new BufferedInputStream(new Tee(from.getInputStream(), out), 64 * 1024));
            skipHttpHeader(in);
            java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
            while (true) {
                int b0 = in.readUnsignedByte();
                int b1 = in.readUnsignedByte();
                boolean fin = (b0 & 0x80) != 0;
                int opcode = b0 & 0x0f;
                long len = b1 & 0x7f;
                if (len == 126) len = in.readUnsignedShort();
                else if (len == 127) len = in.readLong();
                byte[] mask = null;
                if ((b1 & 0x80) != 0) {
                    mask = new byte[4];
                    in.readFully(mask);
                }
                if (len > Integer.MAX_VALUE - 16) throw new IOException("frame of " + len + " bytes");
                byte[] payload = new byte[(int) len];
                in.readFully(payload);
                if (mask != null) for (int i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
                if (opcode >= 8) continue;   // close, ping, pong: forwarded, nothing to record
                text.write(payload);
                if (!fin) continue;
                if (opcode == 1 || opcode == 0) handler.text(text.toString(StandardCharsets.UTF_8), System.currentTimeMillis());
                text.reset();
            }
        } catch (EOFException e) {
            // the other side closed the connection
        } catch (IOException e) {
            reset = true;
        } finally {
            end(from, to, reset);
        }
    }

    private static void skipHttpHeader(DataInputStream in) throws IOException {
        int last4 = 0;
        while (last4 != 0x0d0a0d0a) {   // the header ends with \r\n\r\n
            last4 = (last4 << 8) | in.readUnsignedByte();
        }
    }

    /** One side ended: the other one ends the same way (a reset stays a reset, an orderly close stays one). */
    private void end(Socket a, Socket b, boolean reset) {
        if (reset) {
            reset(a);
            reset(b);
        } else {
            closeQuietly(a);
            closeQuietly(b);
        }
        open.remove(a);
        open.remove(b);
    }

    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (IOException e) {
            // already closed
        }
        closeQuietly(s);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // nothing to do
        }
        for (Socket s : open) reset(s);
    }

    private static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Writes every chunk read from the upstream to the device before the parser sees it. */
    private static final class Tee extends FilterInputStream {
        private final OutputStream copy;

        Tee(InputStream in, OutputStream copy) {
            super(in);
            this.copy = copy;
        }

        @Override
        public int read() throws IOException {
            int c = super.read();
            if (c >= 0) {
                copy.write(c);
                copy.flush();
            }
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) {
                copy.write(b, off, n);
                copy.flush();
            }
            return n;
        }
    }
}
