package im.gateway;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A hand-written WebSocket client over a plain TCP socket, for frames no well-behaved client
 * library will send (a text frame whose payload is not UTF-8, say).
 */
public final class WireSocket implements AutoCloseable {
    /** One received frame. */
    public record Frame(int opcode, byte[] payload) {
        public String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }

        int closeStatus() {
            return payload.length >= 2 ? ((payload[0] & 0xff) << 8) | (payload[1] & 0xff) : -1;
        }
    }

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;

    public WireSocket(int port) throws IOException {
        this(port, 0);
    }

    /** A socket whose kernel receive buffer is {@code receiveBuffer} bytes (0: the system's default). */
    public WireSocket(int port, int receiveBuffer) throws IOException {
        socket = new Socket();
        if (receiveBuffer > 0) socket.setReceiveBufferSize(receiveBuffer);   // before connect: sets the window
        socket.connect(new java.net.InetSocketAddress("127.0.0.1", port));
        socket.setSoTimeout(10_000);
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
        out.write(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) head.write(in.readByte());
        if (!head.toString(StandardCharsets.US_ASCII).startsWith("HTTP/1.1 101")) {
            throw new IOException("upgrade refused: " + head);
        }
    }

    public void setReadTimeout(int millis) throws IOException {
        socket.setSoTimeout(millis);
    }

    public void sendText(byte[] payload) throws IOException {
        sendFrame(0x1, payload);
    }

    public void sendText(String s) throws IOException {
        sendText(s.getBytes(StandardCharsets.UTF_8));
    }

    public void sendFrame(int opcode, byte[] payload) throws IOException {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(0x80 | opcode);
        int n = payload.length;
        if (n < 126) {
            f.write(0x80 | n);
        } else if (n < 65536) {
            f.write(0x80 | 126);
            f.write(n >>> 8);
            f.write(n);
        } else {
            f.write(0x80 | 127);
            for (int i = 7; i >= 0; i--) f.write((int) ((long) n >>> (8 * i)));
        }
        byte[] mask = new byte[4];
        ThreadLocalRandom.current().nextBytes(mask);
        f.write(mask);
        for (int i = 0; i < n; i++) f.write(payload[i] ^ mask[i % 4]);
        out.write(f.toByteArray());
        out.flush();
    }

    public Frame read() throws IOException {
        int b0 = in.readUnsignedByte();
        int b1 = in.readUnsignedByte();
        long len = b1 & 0x7f;
        if (len == 126) len = in.readUnsignedShort();
        else if (len == 127) len = in.readLong();
        byte[] p = new byte[(int) len];
        in.readFully(p);
        return new Frame(b0 & 0x0f, p);
    }

    /** Reads frames until a close frame or EOF; returns the close status (-1 for EOF without one). */
    public int readUntilClose() throws IOException {
        try {
            while (true) {
                Frame f = read();
                if (f.opcode() == 0x8) return f.closeStatus();
            }
        } catch (java.io.EOFException | java.net.SocketException e) {
            return -1;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
