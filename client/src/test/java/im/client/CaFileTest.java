package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.CaFileException;
import im.client.api.ClientOptions;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A CA file that cannot be used is a {@link CaFileException} naming the file at {@link ImClient#open},
 * before the state directory is claimed; a CA file is refused for a plain {@code ws://} uri.
 * (Connecting over {@code wss://} with one is tested against a real gateway: ClientTlsIT.)
 */
class CaFileTest {
    @TempDir
    Path dir;

    private ClientOptions options(Path caFile) {
        return ClientOptions.of(URI.create("wss://127.0.0.1:9/ws"), "tok-1", dir.resolve("state")).withCaFile(caFile);
    }

    @Test
    void aMissingFileAFileWithoutACertificateAndAGarbledOneAreRefusedNamingTheFile() throws Exception {
        Path missing = dir.resolve("missing.pem");
        Path empty = Files.writeString(dir.resolve("empty.pem"), "");
        Path key = Files.writeString(dir.resolve("key.pem"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        Path garbled = Files.writeString(dir.resolve("garbled.pem"),
                "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n", StandardCharsets.US_ASCII);
        for (Path bad : new Path[] {missing, empty, key, garbled}) {
            CaFileException e = assertThrows(CaFileException.class, () -> ImClient.open(options(bad)), bad.toString());
            assertEquals(bad, e.file());
            assertTrue(e.getMessage().startsWith("caFile " + bad + ": "), e.getMessage());
        }
        assertTrue(Files.notExists(dir.resolve("state")), "nothing was claimed or created");
    }

    @Test
    void aCaFileWithAPlainWebSocketUriIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ClientOptions.of(URI.create("ws://127.0.0.1:9/ws"), "tok-1", dir).withCaFile(dir.resolve("ca.pem")));
        assertTrue(e.getMessage().startsWith("caFile: only for a wss:// uri"), e.getMessage());
    }

    @Test
    void withoutACaFileTheJvmTrustStoreIsUsedAndOpenReadsNothing() throws Exception {
        ClientOptions o = ClientOptions.of(URI.create("wss://127.0.0.1:9/ws"), "tok-1", dir.resolve("state"));
        assertEquals(null, o.caFile());
        try (ImClient c = ImClient.open(o)) {
            assertNotNull(c.options());
        }
    }
}
