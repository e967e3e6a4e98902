package im.system;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.ImClient;
import im.client.api.ConnectionState;
import im.gateway.Fixture;
import im.gateway.Gateway;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The read state's black-box bar (issue "Read state"), with the Java SDK against the whole
 * delivery path: bo's phone and tablet and cy's device in a group; ana sends 50 messages; every
 * device counts 50 unread; reading on the phone brings the tablet's count to 0 without a
 * reconnect (the time it took is printed; docs/benchmarks.md, "Read state", has the measured
 * bound); cy's count is untouched; after every role and every client restarted, the counts are
 * the same.
 */
@ExtendWith(ImStackExtension.class)
class ReadStateSystemIT {
    private static final Duration CONVERGE = Duration.ofSeconds(60);

    private static ImClient client(Gateway g, String token, Path dir) throws Exception {
        return Pipeline.client(g, token, dir);
    }

    /** The device's unread count of {@code conv} now (from its local store's read state). */
    private static long unread(ImClient c, String conv) {
        try {
            return c.unread(conv);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aReadOnOneDeviceBringsTheOtherDevicesCountDownAndCountsSurviveARestartOfEverything(TestStack stack, @TempDir Path dir)
            throws Exception {
        Fixture fx = new Fixture(stack);
        String tabletToken = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));   // one bulk join: seq 1
        long head;
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw1 = p.addGateway("gw-1", "");
            Gateway gw2 = p.addGateway("gw-2", "");
            p.awaitRunning();
            try (ImClient ana = client(gw1, fx.anaToken, dir.resolve("ana"));
                 ImClient phone = client(gw1, fx.boToken, dir.resolve("phone"));
                 ImClient tablet = client(gw2, tabletToken, dir.resolve("tablet"));
                 ImClient cy = client(gw2, fx.cyToken, dir.resolve("cy"))) {
                for (int i = 0; i < 50; i++) ana.send("g1", "message " + i);
                head = fx.head("g1");
                for (ImClient c : List.of(phone, tablet, cy)) {
                    Await.until(CONVERGE, () -> c.cursor("g1") == head && unread(c, "g1") == 50, "a device holds the 50 messages, all unread");
                }
                assertEquals(0, unread(ana, "g1"), "her own messages are not unread to ana");

                long t0 = System.nanoTime();
                assertEquals(0, phone.markRead("g1", head).get(30, TimeUnit.SECONDS).unread());
                Await.until(CONVERGE, () -> unread(tablet, "g1") == 0, "the tablet's count came down");
                System.out.printf("read state IT: the tablet's count reached 0 %d ms after the phone's read was sent%n",
                        (System.nanoTime() - t0) / 1_000_000);
                assertEquals(ConnectionState.CONNECTED, tablet.state(), "without a reconnect");
                assertEquals(50, unread(cy, "g1"), "another user's count is its own");
                assertEquals(head, fx.count("SELECT read_seq FROM read_cursors WHERE user_id = 'u-bo' AND conv_id = 'g1'"));
            }
        }
        // Every role and every client stopped; a new relay, delivery node and gateway on the same database.
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-3", "");
            p.awaitRunning();
            try (ImClient phone = client(gw, fx.boToken, dir.resolve("phone"));
                 ImClient tablet = client(gw, tabletToken, dir.resolve("tablet"));
                 ImClient cy = client(gw, fx.cyToken, dir.resolve("cy"))) {
                assertEquals(0, unread(phone, "g1"));
                assertEquals(0, unread(tablet, "g1"));
                assertEquals(50, unread(cy, "g1"));
                assertEquals(50, cy.unreadTotal());
            }
        }
        // A fresh install of cy (an empty local store) gets the same count from the server alone.
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-4", "");
            p.awaitRunning();
            try (ImClient cy = client(gw, fx.cyToken, dir.resolve("cy-fresh"))) {
                Await.until(CONVERGE, () -> unread(cy, "g1") == 50, "a fresh store counts 50 from subbed");
            }
        }
    }
}
