package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.ClientOptions;
import im.client.ImClient;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.ingest.SendService;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java SDK in more conversations than one {@code subbed} page holds: it pages {@code sub}
 * (pushes on for the conversations of every page) and catches up what it missed while offline
 * across all of them with {@code catchup}, then acks every head.
 */
@ExtendWith(ImStackExtension.class)
class ManyConversationsClientIT {
    private static final Duration CONVERGE = Duration.ofSeconds(60);

    @Test
    void aClientInSixHundredConversationsCatchesUpEveryOneAndGetsPushesFromTheSecondPage(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> convs = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            String conv = "c-m%04d".formatted(i);
            fx.dir.createConversation(conv, "direct", List.of("u-ana", "u-bo"));   // joins 1, 2
            convs.add(conv);
        }
        DevicePrincipal ana = fx.dir.authenticate(fx.anaToken);
        try (Pipeline p = new Pipeline(stack, Map.of());
             SendService sends = new SendService(fx.db, Faults.none(), Clock.systemUTC())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            for (String conv : convs) sends.send(ana, conv, "k-" + conv, "while bo was offline");   // 3
            try (ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                bo.connect();
                Await.until(CONVERGE, () -> convs.stream().allMatch(c -> bo.cursor(c) == 3) && bo.cursor("c-ab") == 2,
                        "bo holds every conversation up to its head");
                Await.until(CONVERGE, () -> fx.count("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo'"
                        + " AND conv_id LIKE 'c-m%' AND delivered_seq = 3") == convs.size(), "bo acked every head");
                String last = convs.get(convs.size() - 1);   // listed on the second page of 500
                sends.send(ana, last, "k-pushed", "pushed");
                Await.until(CONVERGE, () -> bo.cursor(last) == 4, "a push of a conversation of the second sub page");
                assertEquals(List.of(2L, 3L, 4L), bo.events(last).stream().map(e -> e.seq()).toList(), "from bo's join on, each once");
            }
        }
    }
}
