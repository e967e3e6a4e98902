package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What a client that stops reading costs the gateway: at most IM_CONN_BUFFER_BYTES (plus one
 * event per concurrent allowance), whatever it asks for; once it reads again every request is
 * answered; if it never does, it is closed after IM_CONN_STALL_MS and costs nothing.
 */
@ExtendWith(ImStackExtension.class)
class ConnectionBudgetIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int BUDGET = 64 * 1024;
    private static final int EVENTS = 20;
    private static final String BODY = "x".repeat(16_000);
    /** Syncs each non-reading socket sends: far more than its budget and its kernel buffers hold. */
    private static final int SYNCS = 40;
    /** Bytes one connection may hold: the budget, one event per concurrent allowance (four), small replies. */
    private static final long PER_CONNECTION_BOUND = BUDGET + 4L * 17_000 + 16_384;

    private static Map<String, String> settings(String stallMs) {
        // a small kernel send buffer, so that little of what a socket asks for hides in the kernel
        return Map.of(ConfigKeys.CONN_BUFFER_BYTES.name(), Integer.toString(BUDGET),
                ConfigKeys.CONN_STALL_MS.name(), stallMs,
                ConfigKeys.CONN_SEND_BUFFER_BYTES.name(), "16384");
    }

    @Test
    void aThousandSocketsThatStopReadingHoldTheirBudgetEachAndAreAnsweredInFullWhenTheyRead(TestStack stack) throws Exception {
        int sockets = 1_000;
        Fixture fx = new Fixture(stack);
        List<String> tokens = readers(fx, sockets);
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        try (InProcessGateway gw = new InProcessGateway(stack, "", settings("600000"))) {
            fill(gw, tokens.get(0));
            List<WireSocket> open = new ArrayList<>();
            try {
                for (String t : tokens) {
                    WireSocket s = new WireSocket(gw.port(), 8 * 1024);
                    open.add(s);
                    s.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + t + "\"}");
                    assertEquals("authed", JSON.readTree(s.read().text()).get("t").asText());
                }
                long before = usedHeapAfterGc(memory);
                for (WireSocket s : open) {
                    for (int i = 0; i < SYNCS; i++) {
                        s.sendText("{\"t\":\"sync\",\"rid\":\"y" + i + "\",\"conv\":\"c-big\",\"after\":" + JOINS + ",\"limit\":" + EVENTS + "}");
                    }
                }
                // Until the gateway has done all it will: each socket is suspended (its budget is full),
                // or everything it asked was answered (whatever the kernel's buffers took).
                // (twice in a row with the same bytes held: a socket whose frames were still in the kernel
                // on the way in looks settled for an instant)
                long[] previous = {-1};
                try {
                    Await.until(Duration.ofSeconds(120), () -> {
                        long now = gw.gateway.unsettledConnections() == 0 && suspended(gw) > 0 ? gw.gateway.heldBytes() : -1;
                        boolean same = now >= 0 && now == previous[0];
                        previous[0] = now;
                        return same;
                    }, "every non-reading socket settled");
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + ": " + gw.gateway.describeConnections(), e);
                }
                long held = gw.gateway.heldBytes();
                long grown = usedHeapAfterGc(memory) - before;
                System.out.printf("%d non-reading sockets, %d of them suspended: %,d bytes held (%,d each), heap grew %,d bytes (%,d each)%n",
                        sockets, suspended(gw), held, held / sockets, grown, grown / sockets);
                assertTrue(held <= sockets * PER_CONNECTION_BOUND, "held " + held + " bytes");
                // what they asked for: 40 pages of 20 x 16 KB each, 12.8 MB a socket; the bound is under 150 KB
                assertTrue(grown <= sockets * (PER_CONNECTION_BOUND + 16_384), "heap grew " + grown + " bytes");

                // A socket that reads again gets an answer to every request, in order, nothing lost.
                for (WireSocket s : open.subList(0, 3)) {
                    Set<String> answered = new HashSet<>();
                    while (answered.size() < SYNCS) {
                        JsonNode f = JSON.readTree(s.read().text());
                        String rid = f.path("rid").asText();
                        assertTrue(answered.add(rid), "one answer to " + rid);
                        if ("synced".equals(f.get("t").asText())) {
                            assertTrue(f.get("events").size() >= 1, "a page holds at least one event");
                        } else {
                            assertEquals("RATE_LIMITED", f.path("code").asText(), f.toString());
                        }
                    }
                }
            } finally {
                for (WireSocket s : open) s.close();
            }
            Await.until(Duration.ofSeconds(30), () -> gw.gateway.openConnections() == 0 && gw.gateway.heldBytes() == 0,
                    "closed sockets hold nothing");
        }
    }

    @Test
    void aSocketThatNeverReadsAgainIsClosedAfterTheStallTime(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        List<String> tokens = readers(fx, 2);
        try (InProcessGateway gw = new InProcessGateway(stack, "", settings("1500"))) {
            fill(gw, tokens.get(0));
            try (WireSocket s = new WireSocket(gw.port(), 8 * 1024)) {
                s.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + tokens.get(1) + "\"}");
                assertEquals("authed", JSON.readTree(s.read().text()).get("t").asText());
                for (int i = 0; i < SYNCS; i++) {
                    s.sendText("{\"t\":\"sync\",\"rid\":\"y" + i + "\",\"conv\":\"c-big\",\"after\":" + JOINS + ",\"limit\":" + EVENTS + "}");
                }
                Await.until(Duration.ofSeconds(30), () -> suspended(gw) == 1, "the socket reached its budget");
                assertTrue(gw.gateway.heldBytes() <= PER_CONNECTION_BOUND, "held " + gw.gateway.heldBytes());
                Await.until(Duration.ofSeconds(30), () -> gw.gateway.slowConsumerCloses() == 1, "closed as a slow consumer");
                Await.until(Duration.ofSeconds(30), () -> gw.gateway.openConnections() == 0 && gw.gateway.heldBytes() == 0,
                        "what it held is freed");
            }
        }
    }

    /** c-big's joins come first: syncs ask for what follows them, the 16 KB messages. */
    private static long JOINS;

    /** {@code n} users, each with one device, all members of c-big; their tokens. */
    private static List<String> readers(Fixture fx, int n) {
        List<String> users = new ArrayList<>();
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String u = "u-r" + i;
            fx.dir.createUser(u, u);
            tokens.add(fx.dir.registerDevice(u, "d-r" + i).token());
            users.add(u);
        }
        fx.dir.createConversation("c-big", "group", users);
        JOINS = fx.head("c-big");
        return tokens;
    }

    /** Sends {@link #EVENTS} messages of 16 KB to c-big. */
    private static void fill(InProcessGateway gw, String token) throws Exception {
        try (WireSocket s = new WireSocket(gw.port())) {
            s.sendText("{\"t\":\"auth\",\"rid\":\"a\",\"token\":\"" + token + "\"}");
            assertEquals("authed", JSON.readTree(s.read().text()).get("t").asText());
            for (int i = 0; i < EVENTS; i++) {
                s.sendText("{\"t\":\"send\",\"rid\":\"s" + i + "\",\"conv\":\"c-big\",\"cmid\":\"m" + i + "\",\"body\":\"" + BODY + "\"}");
                assertEquals("sent", JSON.readTree(s.read().text()).get("t").asText());
            }
        }
    }

    private static int suspended(InProcessGateway gw) {
        return gw.gateway.suspendedConnections();
    }

    private static long usedHeapAfterGc(MemoryMXBean memory) {
        System.gc();
        System.gc();
        return memory.getHeapMemoryUsage().getUsed();
    }
}
