package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.store.directory.Directory;
import im.testkit.ImStackExtension;
import im.testkit.TestCertificates;
import im.testkit.TestCertificates.PrivateCa;
import im.testkit.TestStack;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code im send} and {@code im tail} against a gateway serving TLS itself with a private CA's
 * certificate (made by the test): with {@code --ca-file} they work over {@code https://} and
 * {@code wss://} gateway URLs; without it the command fails at once with one line saying why.
 */
@ExtendWith(ImStackExtension.class)
class CliTlsIT {
    record Run(int code, String out, String err) {}

    private static Run im(String... args) {
        CommandLine cl = Im.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void sendAndTailTrustAPrivateCaFromCaFileAndFailClearlyWithoutIt(TestStack stack, @TempDir Path dir) throws Exception {
        PrivateCa ca = TestCertificates.privateCa(dir, "gateway", "127.0.0.1");
        Settings s = stack.settings(Map.of(
                ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_TOKEN.name(), "cli-tls-admin-token-0123456789",
                ConfigKeys.TLS_CERT.name(), ca.certFile().toString(),
                ConfigKeys.TLS_KEY.name(), ca.keyFile().toString()));
        s.optional(ConfigKeys.KAFKA_BOOTSTRAP).ifPresent(b -> SharedTopics.create(b, s));   // an earlier test may have started Kafka
        Directory directory = new Directory(stack.dataSource(), Clock.systemUTC());
        directory.createUser("u-ana", "ana");
        directory.createUser("u-bo", "bo");
        String ana = directory.registerDevice("u-ana", "d-ana").token();
        String bo = directory.registerDevice("u-bo", "d-bo").token();
        directory.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));
        try (Gateway gw = Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.parse(""), Clock.systemUTC())) {
            String https = "https://127.0.0.1:" + gw.port();
            String caFile = ca.caFile().toString();

            Run sent = im("send", "--gateway", https, "--ca-file", caFile, "--token", ana, "--conv", "c-ab", "over tls");
            assertEquals(0, sent.code(), sent.toString());
            assertTrue(sent.out().startsWith("sent c-ab seq=3 "), sent.toString());
            assertTrue(sent.err().contains("connecting to wss://127.0.0.1:" + gw.port() + "/ws"), sent.toString());

            Run tail = im("tail", "--gateway", "wss://127.0.0.1:" + gw.port() + "/ws", "--ca-file", caFile,
                    "--token", bo, "--conv", "c-ab", "--from", "3", "-n", "1", "--no-ack");
            assertEquals(0, tail.code(), tail.toString());
            assertTrue(tail.out().contains("over tls"), tail.toString());

            Run refused = im("send", "--gateway", https, "--timeout", "5", "--token", ana, "--conv", "c-ab", "no trust");
            assertEquals(1, refused.code(), refused.toString());
            assertTrue(refused.err().contains("the gateway's certificate is not accepted") && refused.err().contains("pass --ca-file"),
                    refused.toString());
            assertTrue(!refused.err().contains("\tat "), "one line, no stack trace: " + refused);

            // the admin commands on the admin listener, which speaks TLS with the same certificate
            String admin = "https://127.0.0.1:" + gw.adminPort();
            Run shown = im("admin", "conv", "show", "c-ab", "--admin-url", admin, "--ca-file", caFile,
                    "--admin-token", "cli-tls-admin-token-0123456789");
            assertEquals(0, shown.code(), shown.toString());
            assertTrue(shown.out().contains("head 3"), shown.toString());
            Run untrusted = im("admin", "conv", "show", "c-ab", "--admin-url", admin, "--admin-token", "cli-tls-admin-token-0123456789");
            assertEquals(1, untrusted.code(), untrusted.toString());
            assertTrue(untrusted.err().contains("the admin listener's certificate is not accepted") && untrusted.err().contains("pass --ca-file"),
                    untrusted.toString());
        }
    }
}
