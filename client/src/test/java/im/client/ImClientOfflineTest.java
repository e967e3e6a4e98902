package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ImErrorException;
import im.client.api.PendingSend;
import im.protocol.ErrorCode;
import im.protocol.Limits;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ImClient behaviour that needs no server: the outbox rules while disconnected, validation, lifecycle. */
class ImClientOfflineTest {
    @TempDir
    Path dir;

    private ClientOptions options() {
        return ClientOptions.of(URI.create("ws://127.0.0.1:1/ws"), "tok-1", dir);
    }

    @Test
    void sendWhileDisconnectedKeepsTheDurableEntryAndThrowsConnectionLost() throws IOException {
        try (ImClient client = ImClient.open(options())) {
            assertThrows(ConnectionLostException.class, () -> client.send("c-ab", "hello"));

            List<PendingSend> pending = client.pending();
            assertEquals(1, pending.size());
            assertEquals("c-ab", pending.get(0).conv());
            assertEquals("hello", pending.get(0).body());
        }
        try (ImClient restarted = ImClient.open(options())) {
            assertEquals(1, restarted.pending().size(), "a restarted process sees the entry");
        }
    }

    @Test
    void enqueueWritesEntriesThatARestartedClientSeesInOrder() throws IOException {
        String a;
        String b;
        try (ImClient client = ImClient.open(options())) {
            a = client.enqueue("c-ab", "one");
            b = client.enqueue("c-ab", "two");
        }
        try (ImClient restarted = ImClient.open(options())) {
            assertEquals(List.of(a, b), restarted.pending().stream().map(PendingSend::cmid).collect(Collectors.toList()));
        }
    }

    @Test
    void invalidMessagesAreRejectedLocallyWithoutAnOutboxEntry() throws IOException {
        try (ImClient client = ImClient.open(options())) {
            assertEquals(ErrorCode.BAD_FIELD, assertThrows(ImErrorException.class, () -> client.send("bad conv", "x")).code());
            assertEquals(ErrorCode.BAD_FIELD, assertThrows(ImErrorException.class, () -> client.send("c-ab", "")).code());
            assertEquals(ErrorCode.BAD_UTF8, assertThrows(ImErrorException.class, () -> client.send("c-ab", "\ud800")).code());
            assertEquals(ErrorCode.BAD_FIELD, assertThrows(ImErrorException.class, () -> client.send("c-ab", "a\u0000b")).code());
            assertEquals(ErrorCode.BODY_TOO_LARGE, assertThrows(ImErrorException.class,
                    () -> client.enqueue("c-ab", "x".repeat(Limits.MAX_BODY_BYTES + 1))).code());

            assertTrue(client.pending().isEmpty());
        }
    }

    @Test
    void requestsAndResendFailFastWhenNotConnected() throws IOException {
        try (ImClient client = ImClient.open(options())) {
            assertFalse(client.isConnected());
            assertNull(client.device());
            assertThrows(ConnectionLostException.class, () -> client.resendPending());
            assertThrows(ConnectionLostException.class, () -> client.syncNow("c-ab"));
        }
    }

    @Test
    void connectToAClosedPortThrowsIOExceptionAndStaysDisconnected() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        ClientOptions o = options().withUri(URI.create("ws://127.0.0.1:" + port + "/ws"))
                .withRequestTimeout(Duration.ofSeconds(2));
        try (ImClient client = ImClient.open(o)) {
            assertThrows(IOException.class, client::connect);
            assertFalse(client.isConnected());
        }
    }

    @Test
    void corruptStateFileFailsOpenNamingTheFile() throws IOException {
        Path file = dir.resolve("outbox.json");
        Files.writeString(file, "{\"version\":1,\"entries\":[{\"cmid\":");

        IOException e = assertThrows(IOException.class, () -> ImClient.open(options()));

        assertTrue(e.getMessage().contains(file.toAbsolutePath().toString()), e.getMessage());
    }

    @Test
    void optionsAreValidatedNamingTheField() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ClientOptions.of(URI.create("http://x/ws"), "t", dir));
        assertTrue(e.getMessage().startsWith("uri"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options().withRequestTimeout(Duration.ZERO));
        assertTrue(e.getMessage().startsWith("requestTimeout"), e.getMessage());
        assertFalse(options().toString().contains("tok-1"), "the token is never printed");
    }

    @Test
    void closeLeavesNoNonDaemonClientThreads() throws IOException {
        ImClient client = ImClient.open(options());
        assertThrows(IOException.class, client::connect);
        client.close();
        client.close(); // idempotent

        List<String> live = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && !t.isDaemon() && t.getName().startsWith("im-client"))
                .map(Thread::getName).collect(Collectors.toList());
        assertEquals(List.of(), live);
    }
}
