package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.embedded.KafkaBrokerProcess;
import im.infra.config.ConfigKeys;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Kafka broker, run as its own process, is killed with kill -9 and restarted. Sends keep
 * committing and being confirmed meanwhile (the send path needs only PostgreSQL); once the broker
 * is back the relay publishes what it could not, and every device converges.
 */
@ExtendWith(ImStackExtension.class)
class KafkaBrokerCrashIT {
    @Test
    void brokerKilledAndRestartedDevicesConverge(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (KafkaBrokerProcess broker = KafkaBrokerProcess.start(dir.resolve("kafka"), 0);
             Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.KAFKA_BOOTSTRAP.name(), broker.bootstrapServers(),
                     ConfigKeys.SWEEP_MS.name(), "500"))) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                ana.connect();
                bo.connect();
                for (int i = 0; i < 5; i++) ana.send("c-ab", "before " + i);
                Await.until(Duration.ofSeconds(60), () -> bo.cursor("c-ab") == 7, "converged before the crash");

                broker.kill();
                List<Long> confirmed = new ArrayList<>();
                for (int i = 0; i < 5; i++) confirmed.add(ana.send("c-ab", "while Kafka is down " + i).seq());
                assertEquals(List.of(8L, 9L, 10L, 11L, 12L), confirmed, "sends are confirmed without Kafka");

                broker.restart();
                Await.until(Duration.ofSeconds(120), () -> bo.cursor("c-ab") == 12, "bo converged after the broker returned");
                Await.until(Duration.ofSeconds(60), () -> fx.count(
                        "SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c-ab'") == 12,
                        "and acked the head");
                List<Long> expected = new ArrayList<>();
                for (long s = 2; s <= 12; s++) expected.add(s);
                assertEquals(expected, bo.events("c-ab").stream().map(e -> e.seq()).toList(), "contiguous, each once");
            }
        }
    }
}
