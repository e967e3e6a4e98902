package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ConnectionReplacedException;
import im.client.api.ConnectionState;
import im.client.api.ImErrorException;
import im.client.api.SentAck;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.ConvState;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The API apps expect of a messaging SDK: the connection state with the reason of a loss, the
 * "recovered / could not recover" signal after a connect, futures for connect and send, and
 * cancellation of a send; against a scripted gateway on a real WebSocket and a real store.
 */
class ImClientConnectionStateTest {
    @TempDir
    Path dir;

    record Change(ConnectionState state, Throwable cause) {
    }

    /** Records the state changes and completes {@code closed} on CLOSED. */
    static final class States implements ClientListener {
        final List<Change> seen = new CopyOnWriteArrayList<>();
        final CompletableFuture<Void> closed = new CompletableFuture<>();
        final CompletableFuture<Throwable> lost = new CompletableFuture<>();
        final CompletableFuture<String> recovery = new CompletableFuture<>();

        @Override
        public void onStateChanged(ConnectionState state, Throwable cause) {
            seen.add(new Change(state, cause));
            if (state == ConnectionState.DISCONNECTED && cause != null) {
                lost.complete(cause);
            }
            if (state == ConnectionState.CLOSED) {
                closed.complete(null);
            }
        }

        @Override
        public void onRecovery(boolean recovered, List<String> behind) {
            recovery.complete(recovered + " " + behind);
        }
    }

    private ClientOptions options(FakeGateway gw) {
        return ClientOptions.of(gw.uri(), "tok-1", dir).withReconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
    }

    @Test
    void statesAreReportedInOrderWithTheReasonOfALossThenClosed() throws Exception {
        States states = new States();
        FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
        try (ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            assertEquals(ConnectionState.DISCONNECTED, c.state());
            c.connect();
            assertEquals(ConnectionState.CONNECTED, c.state());
            gw.close(); // the server goes away: lost, then reconnect attempts that fail
            Throwable cause = states.lost.get(10, TimeUnit.SECONDS);
            assertInstanceOf(ConnectionLostException.class, cause);
        }
        states.closed.get(10, TimeUnit.SECONDS);
        List<ConnectionState> order = states.seen.stream().map(Change::state).toList();
        assertEquals(List.of(ConnectionState.CONNECTING, ConnectionState.CONNECTED, ConnectionState.DISCONNECTED),
                order.subList(0, 3), "all: " + order);
        assertEquals(ConnectionState.CLOSED, order.get(order.size() - 1), "all: " + order);
        assertEquals(1, order.stream().filter(s -> s == ConnectionState.CLOSED).count());
        for (int i = 1; i < order.size(); i++) {
            assertTrue(order.get(i) != order.get(i - 1), "changes only: " + order);
        }
    }

    @Test
    void aConnectionReplacedByANewerOneOfTheDeviceIsNotReconnectedUntilTheAppAsks() throws Exception {
        States states = new States();
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent); ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            c.connect();
            CompletableFuture<Void> reconnecting = new CompletableFuture<>();
            c.addListener(new ClientListener() {
                @Override
                public void onStateChanged(ConnectionState state, Throwable cause) {
                    if (state == ConnectionState.CONNECTING) reconnecting.complete(null);
                }
            });
            gw.closeOpen(ConnectionReplacedException.STATUS, "replaced by a newer connection of this device");
            assertInstanceOf(ConnectionReplacedException.class, states.lost.get(10, TimeUnit.SECONDS));
            // three times the longest backoff of options(gw): an automatic reconnect would have begun by then
            assertThrows(TimeoutException.class, () -> reconnecting.get(600, TimeUnit.MILLISECONDS), "no reconnect of its own");
            assertEquals(1, gw.received(Auth.class).size(), "no reconnect of its own");
            assertEquals(ConnectionState.DISCONNECTED, c.state());
            c.connect();
            assertEquals(2, gw.received(Auth.class).size(), "the app takes the device back with connect()");
        }
    }

    @Test
    void disconnectReportsNoCauseAndARefusedTokenReportsTheServersError() throws Exception {
        States states = new States();
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent); ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            c.connect();
            c.disconnect();
            assertEquals(ConnectionState.DISCONNECTED, c.state());
        }
        states.closed.get(10, TimeUnit.SECONDS);
        Change last = states.seen.get(states.seen.size() - 2);
        assertEquals(new Change(ConnectionState.DISCONNECTED, null), last);

        States refused = new States();
        try (FakeGateway gw = new FakeGateway(f -> new ErrorFrame(f.rid(), ErrorCode.BAD_TOKEN, "no"));
             ImClient c = ImClient.open(options(gw))) {
            c.addListener(refused);
            assertThrows(ImErrorException.class, c::connect);
            Throwable cause = refused.lost.get(10, TimeUnit.SECONDS);
            assertEquals(ErrorCode.BAD_TOKEN, ((ImErrorException) cause).code());
        }
    }

    @Test
    void afterAConnectTheClientReportsRecoveredOnceEveryConversationBehindHasSynced() throws Exception {
        States states = new States();
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent); ImClient c = ImClient.open(options(gw))) {
            c.addListener(new ClientListener() {
                @Override
                public void onRecovery(boolean recovered, List<String> behind) {
                    states.recovery.complete(recovered + " " + behind + " cursor " + c.cursor("c-ab"));
                }
            });
            c.connect();
            assertEquals("true [] cursor 1", states.recovery.get(10, TimeUnit.SECONDS), "the missed event is stored first");
        }
    }

    @Test
    void aSyncThatFailsIsReportedAsNotRecoveredNamingTheConversation() throws Exception {
        States states = new States();
        // the catchup fails too (as on a server without it): the conversation behind falls back to its own sync
        Function<ClientFrame, ServerFrame> failingSync = f -> f instanceof Sync || f instanceof im.protocol.CatchUp
                ? new ErrorFrame(f.rid(), ErrorCode.BAD_FIELD, "no") : FakeGateway.oneUnstoredEvent(f);
        try (FakeGateway gw = new FakeGateway(failingSync); ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            c.connect();
            assertEquals("false [c-ab]", states.recovery.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * Three conversations behind, listed one per {@code subbed} page: the client pages {@code sub}
     * until {@code more} is false, then catches all three up with two {@code catchup} pages (the
     * second sent back the first's {@code after}) and no {@code sync}, and acks each head.
     */
    @Test
    void aPagedSubThenCatchupPagesRecoverEveryConversationWithoutASync() throws Exception {
        States states = new States();
        List<String> convs = List.of("c-1", "c-2", "c-3");
        Function<ClientFrame, ServerFrame> paged = f -> {
            if (f instanceof Sub s) {
                int i = s.after() == null ? 0 : convs.indexOf(s.after()) + 1;
                return new Subbed(s.rid(), List.of(new ConvState(convs.get(i), 1, 0, 0, 0)), i < 2);
            }
            if (f instanceof im.protocol.CatchUp c) {
                boolean first = c.after() == null;
                List<String> page = first ? convs.subList(0, 2) : convs.subList(2, 3);
                if (!first) assertEquals(new im.protocol.CatchUpPosition("c-2", 1), c.after());
                return new im.protocol.CaughtUp(c.rid(),
                        page.stream().map(conv -> new Event(conv, 1, "msg", "m-" + conv, "u-ana", "k-" + conv, "hi", 1L)).toList(),
                        page.stream().map(conv -> new im.protocol.CaughtUpRange(conv, 0, 1)).toList(),
                        first, first ? new im.protocol.CatchUpPosition("c-2", 1) : null);
            }
            return FakeGateway.oneUnstoredEvent(f);
        };
        try (FakeGateway gw = new FakeGateway(paged); ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            c.connect();
            assertEquals("true []", states.recovery.get(10, TimeUnit.SECONDS));
            for (String conv : convs) assertEquals(1, c.cursor(conv), conv);
            assertEquals(3, gw.received(Sub.class).size(), "one sub per page");
            assertEquals(2, gw.received(im.protocol.CatchUp.class).size());
            assertEquals(List.of(), gw.received(Sync.class), "caught up without one sync per conversation");
            ClientRuntimeTest.until(() -> gw.received(im.protocol.Ack.class).size() >= 3, "an ack of each conversation");
        }
    }

    @Test
    void nothingBehindIsRecoveredAtOnce() throws Exception {
        States states = new States();
        Function<ClientFrame, ServerFrame> empty = f -> f instanceof Sub s ? new Subbed(s.rid(), List.of())
                : FakeGateway.oneUnstoredEvent(f);
        try (FakeGateway gw = new FakeGateway(empty); ImClient c = ImClient.open(options(gw))) {
            c.addListener(states);
            c.connect();
            assertEquals("true []", states.recovery.get(10, TimeUnit.SECONDS));
        }
    }

    private static ServerFrame acceptsSends(ClientFrame f) {
        return f instanceof Send s ? new Sent(s.rid(), s.conv(), 7, "m-7", false, 1) : FakeGateway.oneUnstoredEvent(f);
    }

    @Test
    void connectAndSendHaveFutures() throws Exception {
        try (FakeGateway gw = new FakeGateway(ImClientConnectionStateTest::acceptsSends);
             ImClient c = ImClient.open(options(gw).withAutoReceive(false))) {
            c.connectAsync().get(10, TimeUnit.SECONDS);
            assertTrue(c.isConnected());
            CompletableFuture<SentAck> sent = c.sendAsync("c-ab", "hello", Duration.ofSeconds(5));
            assertEquals(7, sent.get(10, TimeUnit.SECONDS).seq());
            assertEquals(List.of(), c.pending(), "confirmed: the entry left the outbox");
        }
    }

    @Test
    void resendingTheOutboxHasAFuture() throws Exception {
        try (FakeGateway gw = new FakeGateway(ImClientConnectionStateTest::acceptsSends);
             ImClient c = ImClient.open(options(gw).withAutoReceive(false).withAutoReconnect(false))) {
            c.enqueue("c-ab", "one");
            c.enqueue("c-ab", "two");
            assertInstanceOf(ConnectionLostException.class,
                    assertThrows(ExecutionException.class, () -> c.resendPendingAsync().get(10, TimeUnit.SECONDS)).getCause());
            c.connect(); // autoReconnect off: no automatic resend
            assertEquals(2, c.resendPendingAsync().get(10, TimeUnit.SECONDS).size());
            assertEquals(List.of(), c.pending());
        }
    }

    @Test
    void aSendFutureFailsWithWhatSendWouldThrowAndKeepsTheEntry() throws Exception {
        try (FakeGateway gw = new FakeGateway(FakeGateway::oneUnstoredEvent);
             ImClient c = ImClient.open(options(gw).withAutoReceive(false))) {
            // not connected: ConnectionLostException, the entry stays for the next connect
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> c.sendAsync("c-ab", "hello", Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionLostException.class, e.getCause());
            assertEquals(1, c.pending().size());
        }
    }

    @Test
    void cancellingASendWithdrawsItFromTheOutboxSoItIsNeverResent() throws Exception {
        Function<ClientFrame, ServerFrame> silent = f -> f instanceof Send ? null
                : f instanceof Auth a ? new Authed(a.rid(), "u-bo", "d-bo", 1) : FakeGateway.oneUnstoredEvent(f);
        try (FakeGateway gw = new FakeGateway(silent); ImClient c = ImClient.open(options(gw).withAutoReceive(false))) {
            c.connect();
            CompletableFuture<SentAck> sent = c.sendAsync("c-ab", "typo", Duration.ofSeconds(30));
            String cmid = c.pending().get(0).cmid();
            assertTrue(sent.cancel(true));
            assertThrows(CancellationException.class, sent::join);
            assertEquals(List.of(), c.pending(), "withdrawn when cancel returned");
            assertFalse(c.cancelPending(cmid), "nothing left to withdraw");
            String other = c.enqueue("c-ab", "later");
            assertTrue(c.cancelPending(other));
        }
        try (ImClient reopened = ImClient.open(ClientOptions.of(java.net.URI.create("ws://127.0.0.1:9/ws"), "tok-1", dir))) {
            assertEquals(List.of(), reopened.pending(), "durably");
        }
    }

    @Test
    void cancellingAConnectStopsItEvenIfTheServerAnswersAfterwards() throws Exception {
        java.util.concurrent.CountDownLatch authSeen = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        Function<ClientFrame, ServerFrame> slowAuth = f -> {
            if (f instanceof Auth) {
                authSeen.countDown();
                try {
                    answer.await(10, TimeUnit.SECONDS); // the answer comes only after the cancel
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return FakeGateway.oneUnstoredEvent(f);
        };
        States states = new States();
        try (FakeGateway gw = new FakeGateway(slowAuth); ImClient c = ImClient.open(options(gw).withAutoReceive(false))) {
            c.addListener(states);
            CompletableFuture<Void> f = c.connectAsync();
            assertTrue(authSeen.await(10, TimeUnit.SECONDS));
            assertTrue(f.cancel(true));
            assertEquals(ConnectionState.DISCONNECTED, c.state());
            answer.countDown();
            c.connect(); // waits for the abandoned handshake to end, then connects anew
        }
        states.closed.get(10, TimeUnit.SECONDS);
        assertEquals(List.of(ConnectionState.CONNECTING, ConnectionState.DISCONNECTED, ConnectionState.CONNECTING,
                        ConnectionState.CONNECTED, ConnectionState.DISCONNECTED, ConnectionState.CLOSED),
                states.seen.stream().map(Change::state).toList(), "the late authed did not connect the cancelled attempt");
    }
}
