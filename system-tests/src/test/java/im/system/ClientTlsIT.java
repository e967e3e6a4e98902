package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.InProcessGateway;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.CertificateRejectedException;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ConnectionState;
import im.client.api.ReceivedEvent;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestCertificates;
import im.testkit.TestCertificates.PrivateCa;
import im.testkit.TestStack;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java SDK over {@code wss://} to a gateway serving TLS itself (IM_TLS_CERT, IM_TLS_KEY) with a
 * certificate of a private CA the test makes: trusting that CA from a PEM file ({@code caFile}) it
 * sends and receives; without it, or for a host name the certificate does not name, {@code connect()}
 * fails at once with {@link CertificateRejectedException} and the client does not retry.
 * Certificates for IP addresses, so no test depends on how this machine resolves names.
 */
@ExtendWith(ImStackExtension.class)
class ClientTlsIT {
    private static Map<String, String> tls(PrivateCa ca) {
        return Map.of(ConfigKeys.TLS_CERT.name(), ca.certFile().toString(), ConfigKeys.TLS_KEY.name(), ca.keyFile().toString());
    }

    private static URI wss(String host, int port) {
        return URI.create("wss://" + host + ":" + port + "/ws");
    }

    @Test
    void theSdkSendsAndReceivesOverWssTrustingAPrivateCaFromItsPemFile(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        PrivateCa ca = TestCertificates.privateCa(dir, "gateway", "127.0.0.1");
        try (Pipeline p = new Pipeline(stack, tls(ca))) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            URI uri = wss("127.0.0.1", gw.port());
            try (ImClient ana = ImClient.open(ClientOptions.of(uri, fx.anaToken, dir.resolve("ana")).withCaFile(ca.caFile()));
                 ImClient bo = ImClient.open(ClientOptions.of(uri, fx.boToken, dir.resolve("bo")).withCaFile(ca.caFile()))) {
                ana.connect();
                bo.connect();
                long seq = ana.send("c-ab", "hello over wss").seq();
                Await.until(Duration.ofSeconds(30), () -> bo.cursor("c-ab") >= seq, "bo stored seq " + seq + " over wss");
                ReceivedEvent last = bo.events("c-ab").get(bo.events("c-ab").size() - 1);
                assertEquals("hello over wss", last.body());
                assertEquals("u-ana", last.sender());
            }
        }
    }

    @Test
    void withoutTheCaFileConnectFailsAtOnceSayingWhyAndIsNotRetried(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        PrivateCa ca = TestCertificates.privateCa(dir, "gateway", "127.0.0.1");
        try (InProcessGateway gw = new InProcessGateway(stack, "", tls(ca));
             ImClient ana = ImClient.open(ClientOptions.of(wss("127.0.0.1", gw.port()), fx.anaToken, dir.resolve("ana"))
                     .withReconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(20)))) {
            List<ConnectionState> states = new CopyOnWriteArrayList<>();
            ana.addListener(new ClientListener() {
                @Override
                public void onStateChanged(ConnectionState state, Throwable cause) {
                    states.add(state);
                }
            });
            CertificateRejectedException e = assertTimeoutPreemptively(Duration.ofSeconds(20),
                    () -> assertThrows(CertificateRejectedException.class, ana::connect));
            assertTrue(e.getMessage().contains("certificate is not accepted") && e.getMessage().contains("set caFile"), e.getMessage());
            Await.holdsFor(Duration.ofMillis(500), () -> states.stream().filter(s -> s == ConnectionState.CONNECTING).count() == 1,
                    "one attempt only, no retries: " + states);
            assertEquals(ConnectionState.DISCONNECTED, ana.state());
        }
    }

    @Test
    void aHostTheCertificateDoesNotNameIsRejectedEvenWithItsCaTrusted(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        PrivateCa ca = TestCertificates.privateCa(dir, "gateway", "127.0.0.2");   // names another address than the one dialled
        try (InProcessGateway gw = new InProcessGateway(stack, "", tls(ca));
             ImClient ana = ImClient.open(ClientOptions.of(wss("127.0.0.1", gw.port()), fx.anaToken, dir.resolve("ana"))
                     .withCaFile(ca.caFile()))) {
            CertificateRejectedException e = assertTimeoutPreemptively(Duration.ofSeconds(20),
                    () -> assertThrows(CertificateRejectedException.class, ana::connect));
            assertTrue(e.getMessage().contains("name the host 127.0.0.1"), e.getMessage());
        }
    }
}
