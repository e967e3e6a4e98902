package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.IOException;
import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
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
        X509Certificate first = selfSigned("gateway-one", cert, key);
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
            X509Certificate second = selfSigned("gateway-two", newCert, newKey);
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

    static SSLContext trusting(X509Certificate cert) throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("gateway", cert);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    /** A self-signed EC certificate for 127.0.0.1, written as PEM (the key as PKCS#8). */
    static X509Certificate selfSigned(String cn, Path certFile, Path keyFile) throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(256);
        KeyPair kp = g.generateKeyPair();
        X500Name name = new X500Name("CN=" + cn);
        Instant now = Instant.now();
        JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name, BigInteger.valueOf(now.toEpochMilli()),
                Date.from(now.minusSeconds(3600)), Date.from(now.plusSeconds(86_400)), name, kp.getPublic());
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
        X509Certificate cert = new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(kp.getPrivate())));
        Files.writeString(certFile, pem("CERTIFICATE", cert.getEncoded()), StandardCharsets.US_ASCII);
        Files.writeString(keyFile, pem("PRIVATE KEY", kp.getPrivate().getEncoded()), StandardCharsets.US_ASCII);
        return cert;
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
