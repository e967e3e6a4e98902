package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.InProcessGateway;
import im.gateway.WireSocket;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.ImClient;
import im.client.api.ClientOptions;
import im.infra.config.ConfigKeys;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that stops reading: its outbound queue fills, further pushes to it are dropped and
 * counted, nobody else is slowed, and once it reads again it converges through sync.
 */
@ExtendWith(ImStackExtension.class)
class SlowClientIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void stalledClientLosesPushesNotMessagesAndOthersAreUnaffected(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        String stalledToken = fx.dir.registerDevice("u-bo", "d-bo-stalled").token();
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.OUTBOUND_QUEUE.name(), "8"))) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (WireSocket stalled = new WireSocket(gw.port());
                 ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                stalled.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + stalledToken + "\"}");
                assertEquals("authed", readReply(stalled).get("t").asText());
                stalled.sendText("{\"t\":\"sub\",\"rid\":\"s\"}");
                // Pushes are asynchronous: one may be written before the subbed reply.
                assertEquals("subbed", readReply(stalled).get("t").asText());
                ana.connect();
                bo.connect();
                // From here on the stalled socket is not read: TCP buffers fill, then its queue.
                String body = "x".repeat(15_000);
                int n = 600;
                for (int i = 0; i < n; i++) ana.send("c-ab", body);
                long head = fx.head("c-ab");
                Await.until(Duration.ofSeconds(90), () -> bo.cursor("c-ab") == head, "bo converged while another client stalled");
                Await.until(Duration.ofSeconds(30), () -> gw.droppedPushes() > 0, "pushes to the stalled client were dropped");
                long dropped = gw.droppedPushes();

                // It resumes: drain what was queued, then sync to the head and ack.
                TreeSet<Long> have = new TreeSet<>();
                stalled.setReadTimeout(3_000);
                try {
                    while (true) {
                        JsonNode f = JSON.readTree(stalled.read().text());
                        if ("event".equals(f.path("t").asText())) have.add(f.get("ev").get("seq").asLong());
                    }
                } catch (SocketTimeoutException drained) {
                    // nothing more queued
                }
                stalled.setReadTimeout(10_000);
                int pushedToStalled = have.size();
                long after = 0;
                int page = 0;
                while (true) {
                    stalled.sendText("{\"t\":\"sync\",\"rid\":\"y" + page++ + "\",\"conv\":\"c-ab\",\"after\":" + after + ",\"limit\":100}");
                    JsonNode r = readReply(stalled);
                    for (JsonNode e : r.get("events")) have.add(e.get("seq").asLong());
                    if (!r.get("more").asBoolean()) break;
                    after = r.get("events").get(r.get("events").size() - 1).get("seq").asLong();
                }
                for (long s = 2; s <= head; s++) assertTrue(have.contains(s), "the stalled device has seq " + s);
                stalled.sendText("{\"t\":\"ack\",\"rid\":\"k\",\"conv\":\"c-ab\",\"seq\":" + head + "}");
                assertEquals(head, readReply(stalled).get("delivered").asLong());
                System.out.printf("slow client: %d messages, %d pushes dropped, %d pushed before the stall filled up%n",
                        n, dropped, pushedToStalled);
                assertTrue(pushedToStalled < n, "the stalled client did not get every push");
            }
        }
    }

    /** The next reply (skipping pushes that arrive in between). */
    private static JsonNode readReply(WireSocket w) throws Exception {
        while (true) {
            JsonNode f = JSON.readTree(w.read().text());
            String t = f.path("t").asText();
            if (!t.equals("event") && !t.equals("hint")) return f;
        }
    }

    @Test
    void aDeviceBehindInManyConversationsCatchesUpWithinTheRequestLimits(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        int convs = 90;   // more than the gateway's default 64 requests in flight per connection
        for (int i = 0; i < convs; i++) fx.dir.createConversation("m" + i, "direct", List.of("u-ana", "u-bo"));
        try (InProcessGateway gw = new InProcessGateway(stack);
             ImClient bo = ImClient.open(ClientOptions.of(gw.ws(), fx.boToken, dir.resolve("bo")))) {
            bo.connect();
            Await.until(Duration.ofSeconds(60), () -> {
                for (int i = 0; i < convs; i++) if (bo.cursor("m" + i) != 2) return false;
                return true;
            }, "all conversations synced");
            try {
                Await.until(Duration.ofSeconds(60),
                        () -> fx.count("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo' AND conv_id LIKE 'm%' AND delivered_seq = 2") == convs,
                        "every conversation acked");
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; acked: "
                        + fx.count("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo' AND conv_id LIKE 'm%' AND delivered_seq = 2"), e);
            }
        }
    }
}
