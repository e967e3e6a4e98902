package im.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ReceivedEvent;
import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.RawSocket;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Edit and recall's black-box bar (issue "Read state", "a recall makes every read path return the
 * tombstone"), with the Java SDK against the whole delivery path: ana edits one message and recalls
 * another in a group of ana, bo (phone and tablet) and cy. Every device shows the edit's text and the
 * tombstone without a reconnect, no device's store or search holds the recalled text, a socket's
 * {@code sync} and {@code catchup} return the tombstone, the unread counts are the messages', and
 * all of it holds after every role and client restarted, and for a fresh install.
 */
@ExtendWith(ImStackExtension.class)
class EditRecallSystemIT {
    private static final Duration CONVERGE = Duration.ofSeconds(60);
    private static final String SECRET = "the launch code is 0000";

    private static ReceivedEvent shown(ImClient c, String conv, long seq) {
        try {
            return c.eventsBefore(conv, seq + 1, 1).stream().filter(e -> e.seq() == seq).findFirst().orElse(null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long unread(ImClient c, String conv) {
        try {
            return c.unread(conv);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void assertShown(ImClient c, long edited, long recalled) throws IOException {
        assertEquals("hello, edited", shown(c, "g1", edited).text(), "the edit's text");
        ReceivedEvent tomb = shown(c, "g1", recalled);
        assertTrue(tomb.recalled() && tomb.body().isEmpty() && tomb.text().isEmpty(), "a tombstone: " + tomb);
        assertEquals(List.of(), c.search("launch", null, null, 10), "search finds nothing of the recalled text");
        assertFalse(c.events("g1").stream().anyMatch(e -> String.valueOf(e.body()).contains("launch")), "no stored event holds it");
    }

    @Test
    void anEditAndARecallReachEveryDeviceAndEveryReadPathAndSurviveARestartOfEverything(TestStack stack, @TempDir Path dir)
            throws Exception {
        Fixture fx = new Fixture(stack);
        String tabletToken = fx.dir.registerDevice("u-bo", "d-bo-tablet").token();
        fx.dir.createConversation("g1", "group", List.of("u-ana", "u-bo", "u-cy"));   // one bulk join: seq 1
        long edited;
        long recalled;
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw1 = p.addGateway("gw-1", "");
            Gateway gw2 = p.addGateway("gw-2", "");
            p.awaitRunning();
            try (ImClient ana = Pipeline.client(gw1, fx.anaToken, dir.resolve("ana"));
                 ImClient phone = Pipeline.client(gw1, fx.boToken, dir.resolve("phone"));
                 ImClient tablet = Pipeline.client(gw2, tabletToken, dir.resolve("tablet"));
                 ImClient cy = Pipeline.client(gw2, fx.cyToken, dir.resolve("cy"))) {
                List<Long> recalls = new CopyOnWriteArrayList<>();
                tablet.addListener(new ClientListener() {
                    @Override
                    public void onRecalled(String conv, long seq) {
                        recalls.add(seq);
                    }
                });
                edited = ana.send("g1", "hello").seq();
                recalled = ana.send("g1", SECRET).seq();
                for (ImClient c : List.of(phone, tablet, cy)) {
                    Await.until(CONVERGE, () -> shown(c, "g1", recalled) != null, "a device holds the secret");
                }
                long editSeq = ana.edit("g1", edited, "hello, edited").seq();
                long recallSeq = ana.recall("g1", recalled).seq();
                assertEquals(List.of(edited + 2, recalled + 2), List.of(editSeq, recallSeq));
                for (ImClient c : List.of(ana, phone, tablet, cy)) {
                    Await.until(CONVERGE, () -> c.cursor("g1") == recallSeq, "a device holds the edit and the recall");
                    assertShown(c, edited, recalled);
                    assertEquals(c == ana ? 0 : 2, unread(c, "g1"), "the two messages count (the tombstone too); the edit and recall do not");
                }
                assertEquals(List.of(recalled), recalls, "the tablet's listener was told, without a reconnect");
                assertEquals(true, ana.recall("g1", recalled).dup(), "recalling again answers the first");
            }
            try (RawSocket bo = new RawSocket(URI(gw1))) {
                bo.auth(fx.dir.registerDevice("u-bo", "d-bo-raw").token());   // no cursors: catch-up reads the whole log
                for (String req : List.of("{\"t\":\"sync\",\"rid\":\"s\",\"conv\":\"g1\",\"after\":0}", "{\"t\":\"catchup\",\"rid\":\"c\"}")) {
                    String reply = bo.request(req).toString();
                    assertFalse(reply.contains("launch"), "no read path returns the recalled text: " + reply);
                    assertTrue(reply.contains("\"recalled\":true"), reply);
                }
            }
        }
        assertEquals(0, fx.count("SELECT count(*) FROM events WHERE body LIKE '%launch%'"), "nor does the database");
        // Every role and every client stopped; a new relay, delivery node and gateway on the same database.
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-3", "");
            p.awaitRunning();
            try (ImClient tablet = Pipeline.client(gw, tabletToken, dir.resolve("tablet"));
                 ImClient fresh = Pipeline.client(gw, fx.cyToken, dir.resolve("cy-fresh"))) {
                assertShown(tablet, edited, recalled);
                Await.until(CONVERGE, () -> fresh.cursor("g1") == recalled + 2, "a fresh install of cy catches up");
                assertShown(fresh, edited, recalled);
                assertEquals(2, unread(fresh, "g1"));
            }
        }
    }

    private static java.net.URI URI(Gateway g) {
        return java.net.URI.create("ws://127.0.0.1:" + g.port() + "/ws");
    }
}
