package im.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.RawSocket;
import im.testkit.Await;
import im.testkit.ImStackExtension;
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
 * Typing indicators through the whole delivery path (docs/protocol.md, "Typing"): a typing on one
 * gateway reaches the other members' online devices on every gateway, never the typer's own
 * devices nor a non-member's; the gateway passes on one per connection and conversation per
 * interval; nothing is stored.
 */
@ExtendWith(ImStackExtension.class)
class TypingSystemIT {
    private static final Duration CONVERGE = Duration.ofSeconds(30);

    private static URI ws(Gateway g) {
        return URI.create("ws://127.0.0.1:" + g.port() + "/ws");
    }

    /** Records every typing push the client's listener gets, as "conv/user". */
    private static List<String> typings(ImClient c) {
        List<String> seen = new CopyOnWriteArrayList<>();
        c.addListener(new ClientListener() {
            @Override
            public void onTyping(String conv, String user) {
                seen.add(conv + "/" + user);
            }
        });
        return seen;
    }

    @Test
    void aTypingReachesTheOtherMembersOnlineDevicesOnEveryGatewayAndNoOneElse(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        String tabletToken = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        String ana2Token = fx.dir.registerDevice("u-ana", "d-ana-2").token();
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo"));
        fx.dir.createConversation("g2", "group", List.of("u-ana", "u-cy"));   // cy shares a conversation with ana, not g1
        long events = fx.count("SELECT count(*) FROM events");
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw1 = p.addGateway("gw-1", "");
            Gateway gw2 = p.addGateway("gw-2", "");
            p.awaitRunning();
            try (ImClient ana = Pipeline.client(gw1, fx.anaToken, dir.resolve("ana"));
                 ImClient ana2 = Pipeline.client(gw2, ana2Token, dir.resolve("ana2"));
                 ImClient phone = Pipeline.client(gw2, fx.boToken, dir.resolve("phone"));
                 ImClient tablet = Pipeline.client(gw1, tabletToken, dir.resolve("tablet"));
                 ImClient cy = Pipeline.client(gw2, fx.cyToken, dir.resolve("cy"))) {
                List<String> atPhone = typings(phone);
                List<String> atTablet = typings(tablet);
                List<String> atAna2 = typings(ana2);
                List<String> atCy = typings(cy);
                // registrations reach the delivery nodes asynchronously: type until the first arrives
                Await.until(CONVERGE, () -> {
                    ana.typing("g1");
                    return !atPhone.isEmpty() && !atTablet.isEmpty();
                }, "bo's phone (other gateway) and tablet (same gateway) see ana typing");
                assertEquals("g1/u-ana", atPhone.get(0));
                assertEquals("g1/u-ana", atTablet.get(0));
                assertFalse(ana.typing("g1"), "a second typing within 2 s is not written");
                // A marker: bo's typing in g1 reaches ana's other device after anything routed for ana's own
                // (one conversation: one partition, routed in order; ana2 and cy share gw-2's channel).
                Await.until(CONVERGE, () -> {
                    phone.typing("g1");
                    return atAna2.contains("g1/u-bo");
                }, "ana's other device sees bo typing");
                assertEquals(List.of("g1/u-bo"), atAna2.stream().distinct().toList(), "never the typer's own devices");
                assertEquals(List.of(), atCy, "never a non-member's");
            }
            try (RawSocket cy = new RawSocket(ws(gw1)); RawSocket ana = new RawSocket(ws(gw1)); RawSocket bo = new RawSocket(ws(gw2))) {
                cy.auth(fx.cyToken);
                cy.request("{\"t\":\"sub\",\"rid\":\"s\"}");
                JsonNode refused = cy.request("{\"t\":\"typing\",\"rid\":\"t1\",\"conv\":\"g1\"}");
                assertEquals("NOT_MEMBER", refused.get("code").asText(), refused.toString());
                bo.auth(fx.boToken);
                bo.request("{\"t\":\"sub\",\"rid\":\"s\"}");
                ana.auth(fx.anaToken);
                ana.request("{\"t\":\"sub\",\"rid\":\"s\"}");
                JsonNode pushed = null;
                long deadline = System.nanoTime() + CONVERGE.toNanos();
                while (pushed == null && System.nanoTime() < deadline) {   // until bo's registration is routed
                    ana.send("{\"t\":\"typing\",\"rid\":\"t\",\"conv\":\"g1\"}");
                    pushed = bo.poll(Duration.ofMillis(2_100));
                }
                assertTrue(pushed != null, "bo's raw socket got a typing");
                assertEquals(List.of("typing", "g1", "u-ana"), List.of(pushed.get("t").asText(), pushed.get("conv").asText(),
                        pushed.get("user").asText()));
                for (int i = 0; i < 5; i++) ana.send("{\"t\":\"typing\",\"rid\":\"t" + i + "\",\"conv\":\"g1\"}");
                JsonNode next = bo.poll(Duration.ofMillis(1_500));
                assertEquals(null, next, "five typings within the interval after one passed on: all dropped");
                assertEquals(null, ana.poll(Duration.ofMillis(100)), "a typing that is taken has no reply");
            }
        }
        assertEquals(events, fx.count("SELECT count(*) FROM events"), "nothing stored");
    }
}
