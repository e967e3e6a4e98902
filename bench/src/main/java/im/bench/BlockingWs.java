package im.bench;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The leanest WebSocket client the send benchmark can have (RFC 6455, text frames only): one
 * blocking socket read and written by the thread that sends, no selector, no executor, no
 * handoff between threads, which is how pgbench's client talks to PostgreSQL. The JDK's
 * {@code HttpClient} WebSocket, which the {@code raw} mode uses, runs a selector thread and hands
 * every frame to an executor; in the send bench that load generator took about half of the
 * JVM's CPU. Hand-written because it is a measuring tool: a library client (Java-WebSocket,
 * Undertow's) reads on a thread of its own and hands frames over, the cost this avoids.
 */
final class BlockingWs implements AutoCloseable {
    private static final String GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;

    private BlockingWs(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 16 * 1024));
        this.out = socket.getOutputStream();
    }

    /** Connects and completes the opening handshake (status 101 and the matching accept key). */
    static BlockingWs open(URI uri) throws IOException {
        Socket s = new Socket(uri.getHost(), uri.getPort());
        s.setTcpNoDelay(true);
        s.setSoTimeout(30_000);
        BlockingWs ws = new BlockingWs(s);
        byte[] nonce = new byte[16];
        ThreadLocalRandom.current().nextBytes(nonce);
        String key = Base64.getEncoder().encodeToString(nonce);
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        String request = "GET " + path + " HTTP/1.1\r\nHost: " + uri.getHost() + ":" + uri.getPort()
                + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key
                + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
        ws.out.write(request.getBytes(StandardCharsets.US_ASCII));
        ws.out.flush();
        String head = ws.readHead();
        if (!head.startsWith("HTTP/1.1 101")) {
            s.close();
            throw new IOException("WebSocket handshake refused: " + head.lines().findFirst().orElse(head));
        }
        if (!head.toLowerCase(java.util.Locale.ROOT).contains("sec-websocket-accept: " + accept(key).toLowerCase(java.util.Locale.ROOT))) {
            s.close();
            throw new IOException("WebSocket handshake: wrong Sec-WebSocket-Accept in " + head);
        }
        return ws;
    }

    private static String accept(String key) {
        try {
            byte[] sha1 = MessageDigest.getInstance("SHA-1").digest((key + GUID).getBytes(StandardCharsets.US_ASCII));
            return Base64.getEncoder().encodeToString(sha1);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private String readHead() throws IOException {
        StringBuilder b = new StringBuilder();
        while (!(b.length() >= 4 && b.substring(b.length() - 4).equals("\r\n\r\n"))) {
            int c = in.read();
            if (c < 0) throw new EOFException("connection closed during the WebSocket handshake");
            b.append((char) c);
        }
        return b.toString();
    }

    /** Sends one text frame (masked, as a client must). */
    void sendText(String text) throws IOException {
        writeFrame(0x1, text.getBytes(StandardCharsets.UTF_8));
    }

    private void writeFrame(int opcode, byte[] payload) throws IOException {
        int len = payload.length;
        int headLen = len < 126 ? 2 : len < 65_536 ? 4 : 10;
        byte[] frame = new byte[headLen + 4 + len];
        frame[0] = (byte) (0x80 | opcode);
        if (len < 126) {
            frame[1] = (byte) (0x80 | len);
        } else if (len < 65_536) {
            frame[1] = (byte) (0x80 | 126);
            frame[2] = (byte) (len >>> 8);
            frame[3] = (byte) len;
        } else {
            frame[1] = (byte) (0x80 | 127);
            for (int k = 0; k < 8; k++) frame[2 + k] = (byte) ((long) len >>> (56 - 8 * k));
        }
        int mask = ThreadLocalRandom.current().nextInt();
        for (int k = 0; k < 4; k++) frame[headLen + k] = (byte) (mask >>> (24 - 8 * k));
        for (int k = 0; k < len; k++) frame[headLen + 4 + k] = (byte) (payload[k] ^ frame[headLen + (k & 3)]);
        out.write(frame);
        out.flush();
    }

    /** Reads the next text message (joining continuation frames; answers pings). */
    String readText() throws IOException {
        java.io.ByteArrayOutputStream msg = null;
        while (true) {
            int b0 = in.readUnsignedByte();
            int b1 = in.readUnsignedByte();
            boolean fin = (b0 & 0x80) != 0;
            int opcode = b0 & 0x0F;
            long len = b1 & 0x7F;
            if (len == 126) len = in.readUnsignedShort();
            else if (len == 127) len = in.readLong();
            if ((b1 & 0x80) != 0) throw new IOException("a server frame must not be masked");
            if (len > 16 * 1024 * 1024) throw new IOException("frame of " + len + " bytes");
            byte[] payload = new byte[(int) len];
            in.readFully(payload);
            switch (opcode) {
                case 0x8 -> throw new EOFException("the server closed the connection");
                case 0x9 -> writeFrame(0xA, payload);   // ping -> pong
                case 0xA -> { }                          // unsolicited pong
                case 0x1, 0x0 -> {
                    if (fin && msg == null) return new String(payload, StandardCharsets.UTF_8);
                    if (msg == null) msg = new java.io.ByteArrayOutputStream();
                    msg.write(payload);
                    if (fin) return msg.toString(StandardCharsets.UTF_8);
                }
                default -> throw new IOException("unexpected opcode " + opcode);
            }
        }
    }

    /** Sends a normal close frame and closes the socket without waiting for the server's. */
    @Override
    public void close() {
        try {
            writeFrame(0x8, new byte[] {0x03, (byte) 0xE8});   // 1000 normal closure
        } catch (IOException ignored) {
            // closing anyway
        }
        try {
            socket.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
