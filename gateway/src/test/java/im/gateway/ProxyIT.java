package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestCertificates;
import im.testkit.TestStack;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TLS-terminating proxy the docs and the compose overlay show ({@code ops/proxy/nginx.conf}),
 * run with real nginx in front of a real gateway: devices get HTTPS and WSS through it, the web
 * client carries HSTS, and nothing of the admin listener's is reachable through it. Only the
 * addresses (upstream, listen, certificate, temp files) are rewritten for the test; each rewrite
 * must match, so the test fails when the file changes shape. Needs nginx (Debian's nginx-light,
 * which ./run-tests installs).
 */
@ExtendWith(ImStackExtension.class)
class ProxyIT {
    private static final Path CONF = Path.of("..", "ops", "proxy", "nginx.conf");

    private static String nginx() {
        for (String dir : (System.getenv().getOrDefault("PATH", "/usr/bin") + ":/usr/sbin").split(":")) {
            Path p = Path.of(dir, "nginx");
            if (Files.isExecutable(p)) return p.toString();
        }
        throw new AssertionError("nginx not found on PATH or in /usr/sbin: install Debian's nginx-light"
                + " (apt-get install nginx-light), as ./run-tests does");
    }

    @Test
    void devicesReachTheGatewayThroughTheProxyAndTheAdminListenerDoesNot(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        X509Certificate cert = TestCertificates.selfSigned("im-proxy", "127.0.0.1", dir.resolve("cert.pem"), dir.resolve("key.pem"));
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            int port = freePort();
            Path conf = dir.resolve("nginx.conf");
            Files.writeString(conf, forTest(Files.readString(CONF), gw.port(), port, dir), StandardCharsets.UTF_8);
            Process proxy = new ProcessBuilder(nginx(), "-e", "stderr", "-p", dir.toString(), "-c", conf.toString(), "-g", "daemon off;")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("nginx.log").toFile()).start();
            try {
                SSLContext trust = TlsIT.trusting(cert);
                HttpClient https = HttpClient.newBuilder().sslContext(trust).connectTimeout(Duration.ofSeconds(2)).build();
                String base = "https://127.0.0.1:" + port;
                try {
                    Await.until(Duration.ofSeconds(30), () -> status(https, base + "/") == 200, "nginx serving the web client on " + base);
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "; nginx's log: " + log(dir), e);
                }

                HttpResponse<String> page = https.send(HttpRequest.newBuilder(URI.create(base + "/")).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals("max-age=31536000", page.headers().firstValue("Strict-Transport-Security").orElse(""), "HSTS from the proxy");
                for (String path : new String[] {"/admin/users", "/metrics", "/readyz", "/healthz"}) {
                    assertEquals(404, status(https, base + path), path + " through the proxy");
                }

                try (RawSocket device = new RawSocket(URI.create("wss://127.0.0.1:" + port + "/ws"), https)) {
                    assertEquals("authed", device.auth(fx.anaToken).get("t").asText(), "WSS through the proxy");
                    JsonNode sent = device.request("{\"t\":\"send\",\"rid\":\"s1\",\"conv\":\"c-ab\",\"cmid\":\"m-proxy\",\"body\":\"through nginx\"}");
                    assertEquals("sent", sent.get("t").asText(), sent.toString());
                    assertEquals(3, sent.get("seq").asLong(), "after the two joins");
                }
            } finally {
                proxy.destroy();
                assertTrue(proxy.waitFor(10, TimeUnit.SECONDS), "nginx stops on SIGTERM");
            }
        }
    }

    /** The compose file's proxy configuration, pointed at this test's gateway, port, certificate and directory. */
    private static String forTest(String conf, int gatewayPort, int listenPort, Path dir) {
        conf = replace(conf, "server gateway-1:8080 max_fails=1 fail_timeout=5s;", "server 127.0.0.1:" + gatewayPort + ";");
        conf = replace(conf, "server gateway-2:8080 max_fails=1 fail_timeout=5s;", "");
        conf = replace(conf, "listen 443 ssl;", "listen 127.0.0.1:" + listenPort + " ssl;");
        conf = replace(conf, "/etc/im-tls/", dir + "/");
        conf = replace(conf, "/tmp/im-proxy", dir + "/im-proxy");
        return conf;
    }

    private static String replace(String text, String what, String with) {
        if (!text.contains(what)) throw new AssertionError(CONF + " no longer contains '" + what + "': update ProxyIT");
        return text.replace(what, with);
    }

    private static int status(HttpClient http, String url) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static String log(Path dir) {
        try {
            return Files.readString(dir.resolve("nginx.log"));
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
