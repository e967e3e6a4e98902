package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.api.CaFile;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestCertificates;
import im.testkit.TestStack;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway serves HTTPS and WSS itself from PEM files (IM_TLS_CERT, IM_TLS_KEY), with HSTS on
 * the web client, refuses plain HTTP on that port, and picks up a renewed certificate without a
 * restart. The certificates are made by the test.
 */
@ExtendWith(ImStackExtension.class)
class TlsIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theGatewayServesHttpsAndWssAndReloadsItsCertificate(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        X509Certificate first = TestCertificates.selfSigned("gateway-one", "127.0.0.1", cert, key);
        try (InProcessGateway gw = new InProcessGateway(stack, "", Map.of(
                ConfigKeys.TLS_CERT.name(), cert.toString(), ConfigKeys.TLS_KEY.name(), key.toString()))) {
            HttpClient https = HttpClient.newBuilder().sslContext(trusting(first)).build();
            String base = "https://127.0.0.1:" + gw.port();
            String admin = "https://127.0.0.1:" + gw.gateway.adminPort();
            assertEquals(200, https.send(HttpRequest.newBuilder(URI.create(admin + "/healthz")).build(), HttpResponse.BodyHandlers.ofString()).statusCode(),
                    "the admin listener serves TLS too");
            HttpResponse<String> page = https.send(HttpRequest.newBuilder(URI.create(base + "/")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals("max-age=31536000", page.headers().firstValue("Strict-Transport-Security").orElse(""), "HSTS on the web client");

            CompletableFuture<String> reply = new CompletableFuture<>();
            WebSocket ws = https.newWebSocketBuilder().buildAsync(URI.create("wss://127.0.0.1:" + gw.port() + "/ws"), new WebSocket.Listener() {
                @Override
                public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                    reply.complete(data.toString());
                    return null;
                }
            }).get(10, TimeUnit.SECONDS);
            ws.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + fx.anaToken + "\"}", true);
            assertEquals("authed", JSON.readTree(reply.get(10, TimeUnit.SECONDS)).get("t").asText(), "WSS works");
            ws.abort();

            HttpClient plain = HttpClient.newHttpClient();
            assertThrows(IOException.class, () -> plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()), "no plain HTTP on the TLS port");
            assertTrue(negotiated(first, gw.port()).matches("TLSv1\\.[23]"));

            // The certificate is renewed in place: new connections get the new one, without a restart.
            Path newCert = dir.resolve("new-cert.pem");
            Path newKey = dir.resolve("new-key.pem");
            X509Certificate second = TestCertificates.selfSigned("gateway-two", "127.0.0.1", newCert, newKey);
            Files.move(newKey, key, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            Files.move(newCert, cert, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            Files.setLastModifiedTime(cert, java.nio.file.attribute.FileTime.from(Instant.now().plusSeconds(5)));
            Await.until(Duration.ofSeconds(30), () -> gw.gateway.tlsReloads() >= 1, "the renewed certificate was loaded");
            HttpClient renewed = HttpClient.newBuilder().sslContext(trusting(second)).build();
            assertEquals(200, renewed.send(HttpRequest.newBuilder(URI.create(base + "/")).build(), HttpResponse.BodyHandlers.ofString()).statusCode(),
                    "a client that trusts only the new certificate connects");
            assertEquals(200, renewed.send(HttpRequest.newBuilder(URI.create(admin + "/healthz")).build(), HttpResponse.BodyHandlers.ofString()).statusCode(),
                    "on the admin listener too");
        }
    }

    /** The protocol a client trusting {@code cert} negotiates with the gateway. */
    private static String negotiated(X509Certificate cert, int port) throws Exception {
        try (SSLSocket s = (SSLSocket) trusting(cert).getSocketFactory().createSocket("127.0.0.1", port)) {
            s.startHandshake();
            return s.getSession().getProtocol();
        }
    }

    static SSLContext trusting(X509Certificate cert) {
        return CaFile.sslContext(List.of(cert));
    }
}
