package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ConversationSummary;
import im.client.api.ImErrorException;
import im.client.api.ReadStatus;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.CatchUp;
import im.protocol.CaughtUp;
import im.protocol.CaughtUpRange;
import im.protocol.ClientFrame;
import im.protocol.ConvState;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Read;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import im.protocol.Unread;
import im.testkit.Await;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Read state and unread counts (docs/protocol.md, "Read state and unread counts") against the fake
 * gateway: {@code markRead} coalescing and errors, the unread rule over {@code subbed}, pushes, sync
 * and catch-up pages, {@code unread} pushes from another device, and the counts after a restart.
 */
class ImClientReadStateTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    /** c-ab as the server holds it; u-bo is the device's user. */
    private final List<Event> log = new CopyOnWriteArrayList<>(List.of(
            ev(1, Event.JOIN, "u-bo"), ev(2, Event.MSG, "u-ana"), ev(3, Event.MSG, "u-ana"),
            ev(4, Event.MSG, "u-bo"), ev(5, Event.MSG, "u-ana")));

    private static Event ev(long seq, String kind, String sender) {
        boolean msg = Event.MSG.equals(kind);
        return new Event("c-ab", seq, kind, "m-" + seq, sender, msg ? "cm-" + seq : null, msg ? "body " + seq : null, 1000 + seq);
    }

    private long head() {
        return log.stream().mapToLong(Event::seq).max().orElse(0);
    }

    /** The gateway: read cursor 3 of u-bo at head 5 (seq 5 is unread); {@code read} frames are answered by the test. */
    private ServerFrame script(ClientFrame f) {
        if (f instanceof Auth a) {
            return new Authed(a.rid(), "u-bo", "d-bo", 1);
        } else if (f instanceof Sub s) {
            return new Subbed(s.rid(), List.of(new ConvState("c-ab", 5, 0, 3, 1)));
        } else if (f instanceof CatchUp c) {
            return new CaughtUp(c.rid(), List.copyOf(log), List.of(new CaughtUpRange("c-ab", 0, head())), false, null);
        } else if (f instanceof Sync s) {
            return new Synced(s.rid(), s.conv(), log.stream().filter(e -> e.seq() > s.after()).toList(), false, head());
        } else if (f instanceof Ack a) {
            return new Acked(a.rid(), a.conv(), a.seq());
        } else if (f instanceof Read) {
            return null;
        }
        throw new IllegalArgumentException("unexpected frame " + f);
    }

    private void push(FakeGateway gw, Event e) {
        if (log.stream().noneMatch(x -> x.seq() == e.seq())) {
            log.add(e);
        }
        gw.push(new EventPush(e));
    }

    private ClientOptions options(FakeGateway gw) {
        return ClientOptions.of(gw.uri(), "t-bo", dir);
    }

    private static List<Read> reads(FakeGateway gw) {
        return gw.received(Read.class).stream().map(r -> (Read) r.frame()).toList();
    }

    /** Every {@code onUnread} call, in order. */
    private static final class Calls implements ClientListener {
        final List<ReadStatus> calls = new CopyOnWriteArrayList<>();

        @Override
        public void onUnread(String conv, long read, long unread) {
            calls.add(new ReadStatus(conv, read, unread));
        }

        ReadStatus last() {
            return calls.isEmpty() ? null : calls.get(calls.size() - 1);
        }
    }

    @Test
    void unreadIsTheLatestStatesUnreadPlusTheMessagesOfOthersHeldAboveItsHead() throws Exception {
        Calls listener = new Calls();
        try (FakeGateway gw = new FakeGateway(this::script)) {
            try (ImClient bo = ImClient.open(options(gw))) {
                bo.addListener(listener);
                bo.connect();
                Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");
                assertEquals(new ReadStatus("c-ab", 3, 1), bo.readStatus("c-ab"),
                        "subbed: read 3, unread 1 at head 5; the caught-up events 1..5 are at or below that head");

                push(gw, ev(6, Event.MSG, "u-ana"));
                push(gw, ev(6, Event.MSG, "u-ana"));   // a duplicate push never counts twice
                push(gw, ev(7, Event.MSG, "u-bo"));    // the user's own message
                push(gw, ev(8, Event.JOIN, "u-cy"));   // a join
                push(gw, ev(9, Event.MSG, "u-cy"));
                Await.until(WAIT, () -> bo.cursor("c-ab") == 9, "stored up to 9");
                assertEquals(1 + 2, bo.unread("c-ab"), "6 and 9 are other users' messages above head 5");

                // 10 is missed: 11 opens a gap, the sync page brings 10 and 11 again.
                log.add(ev(10, Event.MSG, "u-ana"));
                push(gw, ev(11, Event.MSG, "u-ana"));
                Await.until(WAIT, () -> bo.cursor("c-ab") == 11, "synced up to 11");
                assertEquals(1 + 4, bo.unread("c-ab"), "10 from the sync page, 11 pushed and synced: once");
                Await.until(WAIT, () -> new ReadStatus("c-ab", 3, 5).equals(listener.last()), "onUnread(c-ab, 3, 5)");

                // States arriving late: a lower read cursor, and the same cursor at a lower head. Ignored.
                gw.push(new Unread("c-ab", new ReadState(2, 4, 5)));
                gw.push(new Unread("c-ab", new ReadState(3, 0, 4)));
                // Another device read up to 9: 10 and 11 remain.
                gw.push(new Unread("c-ab", new ReadState(9, 2, 11)));
                Await.until(WAIT, () -> new ReadStatus("c-ab", 9, 2).equals(listener.last()), "onUnread(c-ab, 9, 2)");
                List<ReadStatus> calls = listener.calls;
                assertEquals(new ReadStatus("c-ab", 3, 5), calls.get(calls.size() - 2), "the late states changed nothing: " + calls);
                assertEquals(new ReadStatus("c-ab", 3, 1), calls.get(0), "first: the subbed state");
                assertTrue(calls.stream().allMatch(s -> s.read() >= 3), "never a lower cursor: " + calls);
                assertEquals(new ReadStatus("c-ab", 9, 2), bo.readStatus("c-ab"));
                assertEquals(2, bo.unreadTotal());
            }
            // A restart, offline: the counts are in the local store.
            try (ImClient again = ImClient.open(options(gw))) {
                assertEquals(new ReadStatus("c-ab", 9, 2), again.readStatus("c-ab"));
                assertEquals(2, again.unreadTotal());
                ConversationSummary row = again.conversations(null, 10).get(0);
                assertEquals("c-ab", row.conv());
                assertEquals(9, row.readSeq());
                assertEquals(2, row.unread());
            }
        }
    }

    /**
     * A pushed event beyond the local store's key range (seq above 2^40 - 1; the protocol allows up to
     * 2^53 - 1) is dropped with an error, never acked or counted; the events pushed with it are stored.
     */
    @Test
    void aPushedEventBeyondTheStoresSeqRangeIsDroppedAndTheRestStored() throws Exception {
        try (FakeGateway gw = new FakeGateway(this::script);
             ImClient bo = ImClient.open(options(gw))) {
            bo.connect();
            Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");
            long beyond = 1L << 40;   // LocalStore.MAX_SEQ + 1
            gw.push(new EventPush(ev(beyond, Event.MSG, "u-ana")));
            push(gw, ev(6, Event.MSG, "u-ana"));
            Await.until(WAIT, () -> bo.cursor("c-ab") == 6, "stored 6");
            assertEquals(List.of(6L), bo.eventsAfter("c-ab", 5, 10).stream().map(e -> e.seq()).toList());
            assertEquals(1 + 1, bo.unread("c-ab"), "5 and 6; not the dropped one");
            Await.until(WAIT, () -> gw.received(Ack.class).stream().anyMatch(r -> ((Ack) r.frame()).seq() == 6), "6 acked");
            assertTrue(gw.received(Ack.class).stream().allMatch(r -> ((Ack) r.frame()).seq() <= 6), "nothing above 6 acked");
        }
    }

    @Test
    void markReadKeepsOneReadInFlightPerConversationAndMergesTheCallsMeanwhile() throws Exception {
        Calls listener = new Calls();
        try (FakeGateway gw = new FakeGateway(this::script);
             ImClient bo = ImClient.open(options(gw))) {
            bo.addListener(listener);
            bo.connect();
            Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");

            CompletableFuture<ReadStatus> first = bo.markRead("c-ab", 3);
            Await.until(WAIT, () -> reads(gw).size() == 1, "the first read");
            CompletableFuture<ReadStatus> a = bo.markRead("c-ab", 4);
            CompletableFuture<ReadStatus> b = bo.markRead("c-ab", 5);
            CompletableFuture<ReadStatus> c = bo.markRead("c-ab", 2);
            gw.push(new ReadAck(reads(gw).get(0).rid(), "c-ab", new ReadState(3, 1, 5)));
            assertEquals(new ReadStatus("c-ab", 3, 1), first.get(10, TimeUnit.SECONDS));

            Await.until(WAIT, () -> reads(gw).size() == 2, "one follow-up");
            Read followUp = reads(gw).get(1);
            assertEquals(new Read(followUp.rid(), "c-ab", 5), followUp, "the highest seq of the three calls");
            assertFalse(a.isDone() || b.isDone() || c.isDone(), "they wait for the follow-up's answer");
            gw.push(new ReadAck(followUp.rid(), "c-ab", new ReadState(5, 0, 5)));
            for (CompletableFuture<ReadStatus> f : List.of(a, b, c)) {
                assertEquals(new ReadStatus("c-ab", 5, 0), f.get(10, TimeUnit.SECONDS));
            }
            Await.until(WAIT, () -> new ReadStatus("c-ab", 5, 0).equals(listener.last()), "onUnread(c-ab, 5, 0)");

            // Errors, and a cancelled call that does not raise the follow-up's seq.
            CompletableFuture<ReadStatus> refused = bo.markRead("c-ab", 5);
            Await.until(WAIT, () -> reads(gw).size() == 3, "a third read, after the merged two");
            CompletableFuture<ReadStatus> cancelled = bo.markRead("c-ab", 9);
            CompletableFuture<ReadStatus> ahead = bo.markRead("c-ab", 6);
            assertTrue(cancelled.cancel(false));
            gw.push(new ErrorFrame(reads(gw).get(2).rid(), ErrorCode.NOT_MEMBER, "not a member"));
            ExecutionException e = assertThrows(ExecutionException.class, () -> refused.get(10, TimeUnit.SECONDS));
            assertEquals(ErrorCode.NOT_MEMBER, assertInstanceOf(ImErrorException.class, e.getCause()).code());

            Await.until(WAIT, () -> reads(gw).size() == 4, "the follow-up of the call not cancelled");
            assertEquals(6, reads(gw).get(3).seq(), "the cancelled call's 9 is withdrawn");
            gw.push(new ErrorFrame(reads(gw).get(3).rid(), ErrorCode.CURSOR_AHEAD, "above the head"));
            e = assertThrows(ExecutionException.class, () -> ahead.get(10, TimeUnit.SECONDS));
            assertEquals(ErrorCode.CURSOR_AHEAD, assertInstanceOf(ImErrorException.class, e.getCause()).code());
            assertEquals(new ReadStatus("c-ab", 5, 0), bo.readStatus("c-ab"), "refused reads change nothing");
            assertEquals(4, reads(gw).size());
        }
    }

    /**
     * At most one read per conversation per interval, also when the next call comes after the answer:
     * the SDK forgot the conversation once its read was answered with nothing waiting, so a call
     * made then was sent at once, and a recipient calling markRead per message received sent a read
     * per message (the capacity benchmark with reads on: 12 reads a second per conversation).
     */
    @Test
    void aCallAfterTheAnswerWithinTheIntervalWaitsForTheIntervalsEnd() throws Exception {
        try (FakeGateway gw = new FakeGateway(this::script);
             ImClient bo = ImClient.open(options(gw))) {
            bo.connect();
            Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");
            long t0 = System.nanoTime();
            CompletableFuture<ReadStatus> first = bo.markRead("c-ab", 3);
            Await.until(WAIT, () -> reads(gw).size() == 1, "the first read");
            gw.push(new ReadAck(reads(gw).get(0).rid(), "c-ab", new ReadState(3, 1, 5)));
            assertEquals(new ReadStatus("c-ab", 3, 1), first.get(10, TimeUnit.SECONDS));
            CompletableFuture<ReadStatus> second = bo.markRead("c-ab", 5);
            Await.until(WAIT, () -> reads(gw).size() == 2, "the second read, once the interval has passed");
            long elapsed = System.nanoTime() - t0;
            assertTrue(elapsed >= TimeUnit.SECONDS.toNanos(1),   // ReadPath.READ_INTERVAL_NANOS
                    "sent " + elapsed / 1_000_000 + " ms after the first call: not before the interval since the first read");
            gw.push(new ReadAck(reads(gw).get(1).rid(), "c-ab", new ReadState(5, 0, 5)));
            assertEquals(new ReadStatus("c-ab", 5, 0), second.get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void aReadWithoutAnAnswerTimesOutAndTheCallsMeanwhileAreSentAfterIt() throws Exception {
        try (FakeGateway gw = new FakeGateway(this::script);
             ImClient bo = ImClient.open(options(gw).withRequestTimeout(Duration.ofMillis(300)))) {
            bo.connect();
            Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");
            CompletableFuture<ReadStatus> lost = bo.markRead("c-ab", 4);
            Await.until(WAIT, () -> reads(gw).size() == 1, "the read");
            CompletableFuture<ReadStatus> next = bo.markRead("c-ab", 5);
            ExecutionException e = assertThrows(ExecutionException.class, () -> lost.get(10, TimeUnit.SECONDS));
            assertInstanceOf(im.client.api.SendTimeoutException.class, e.getCause());
            Await.until(WAIT, () -> reads(gw).size() == 2, "the follow-up, once the first timed out");
            gw.push(new ReadAck(reads(gw).get(1).rid(), "c-ab", new ReadState(5, 0, 5)));
            assertEquals(new ReadStatus("c-ab", 5, 0), next.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * The campaign's checker caught this: a read committed during a database fault whose readack was
     * lost left the device's own read state behind for good (its unread count wrong) until the user
     * read again. The caller still hears of the timeout, and the SDK sends the read again, with
     * backoff, until the server answers it.
     */
    @Test
    void aReadThatTimedOutIsSentAgainUntilAnsweredSoTheDevicesStateConverges() throws Exception {
        try (FakeGateway gw = new FakeGateway(this::script);
             ImClient bo = ImClient.open(options(gw).withRequestTimeout(Duration.ofMillis(300)))) {
            bo.connect();
            Await.until(WAIT, () -> bo.cursor("c-ab") == 5, "caught up to 5");
            CompletableFuture<ReadStatus> lost = bo.markRead("c-ab", 4);
            ExecutionException e = assertThrows(ExecutionException.class, () -> lost.get(10, TimeUnit.SECONDS));
            assertInstanceOf(im.client.api.SendTimeoutException.class, e.getCause(), "the caller hears of the timeout");
            Await.until(WAIT, () -> reads(gw).size() >= 2, "the same read sent again, nobody asking");
            assertEquals(4, reads(gw).get(1).seq());
            gw.push(new ReadAck(reads(gw).get(reads(gw).size() - 1).rid(), "c-ab", new ReadState(4, 1, 5)));
            Await.until(WAIT, () -> {
                try {
                    return bo.readStatus("c-ab").read() == 4;
                } catch (java.io.IOException x) {
                    throw new java.io.UncheckedIOException(x);
                }
            }, "the device's read state follows the answer");
            int sent = reads(gw).size();
            bo.markRead("c-ab", 5);   // a marker: the next read after the answered one
            Await.until(WAIT, () -> reads(gw).size() > sent, "the marker's read");
            assertEquals(5, reads(gw).get(sent).seq(), "answered: the read of 4 is not sent again");
        }
    }

    @Test
    void markReadWhileOfflineWaitsForTheNextConnectAndFailsOnlyWhenTheClientCloses() throws Exception {
        try (FakeGateway gw = new FakeGateway(this::script)) {
            CompletableFuture<ReadStatus> waiting;
            try (ImClient bo = ImClient.open(options(gw))) {
                waiting = bo.markRead("c-ab", 3);   // queued while offline (answered below, once connected), as the TypeScript SDK does
                ExecutionException e = assertThrows(ExecutionException.class, () -> bo.markRead("c ab", 3).get(10, TimeUnit.SECONDS));
                assertEquals(ErrorCode.BAD_FIELD, assertInstanceOf(ImErrorException.class, e.getCause()).code(), "refused locally at once");
                bo.connect();
                Await.until(WAIT, () -> reads(gw).size() == 1, "sent once connected");
                assertEquals(3, reads(gw).get(0).seq());
                gw.push(new ReadAck(reads(gw).get(0).rid(), "c-ab", new ReadState(3, 2, 5)));
                assertEquals(3, waiting.get(10, TimeUnit.SECONDS).read(), "answered once connected");
            }
            CompletableFuture<ReadStatus> left;
            try (ImClient bo = ImClient.open(options(gw))) {
                left = bo.markRead("c-ab", 4);
            }
            ExecutionException e = assertThrows(ExecutionException.class, () -> left.get(10, TimeUnit.SECONDS));
            assertInstanceOf(im.client.api.ConnectionLostException.class, e.getCause(), "the client closed before it could send it");
        }
    }
}
