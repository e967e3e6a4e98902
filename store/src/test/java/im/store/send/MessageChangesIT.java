package im.store.send;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.Event;
import im.store.directory.Directory;
import im.store.read.ConversationReader;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Edit and recall as events of the log (docs/protocol.md, "Edit and recall"): what they append,
 * what every read of the log returns after them, their rules and their idempotency, against a
 * real PostgreSQL.
 */
@ExtendWith(ImStackExtension.class)
class MessageChangesIT {
    private static final Duration WINDOW = Duration.ofHours(1);

    private DataSource db;
    private Directory dir;
    private SendService sends;
    private MessageChanges changes;
    private ConversationReader reader;
    private DevicePrincipal ana;
    private DevicePrincipal bo;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        sends = new SendService(db, Faults.none(), Clock.systemUTC());
        changes = new MessageChanges(db, Faults.none(), Clock.systemUTC(), WINDOW, WINDOW);
        reader = new ConversationReader(db);
        dir.createUser("u-ana", "Ana");
        dir.createUser("u-bo", "Bo");
        ana = dir.authenticate(dir.registerDevice("u-ana", "d-ana").token());
        bo = dir.authenticate(dir.registerDevice("u-bo", "d-bo").token());
        dir.createConversation("g", "group", List.of("u-ana", "u-bo"));   // a bulk join: seq 1
    }

    @AfterEach
    void close() {
        sends.close();
    }

    @Test
    void anEditIsAnEventThatRefersToTheMessageAndCountsAsNoMessage() throws SQLException {
        long msg = sends.send(ana, "g", "cm-1", "helo").seq();
        SendResult edit = changes.edit(ana, "g", "cm-2", msg, "hello");
        assertEquals(List.of(msg + 1, false), List.of(edit.seq(), edit.dup()));

        List<Event> log = reader.sync(bo, "g", 0, 100).events();
        Event original = log.get(1);
        Event change = log.get(2);
        assertEquals(List.of(Event.MSG, "helo", 0L, false), List.of(original.kind(), original.body(), original.ref(), original.recalled()),
                "the message keeps its original body: the log holds its history");
        assertEquals(List.of(Event.EDIT, "hello", msg, "cm-2", "u-ana"), List.of(change.kind(), change.body(), change.ref(),
                change.cmid(), change.sender()));
        assertEquals(1, unread("u-bo", 0, edit.seq()), "an edit is no new message for bo");
        assertEquals(0, unread("u-ana", 0, edit.seq()));
    }

    @Test
    void aRecallEmptiesTheMessageAndItsEditsOnEveryReadPathAndInTheDatabase() throws SQLException {
        long msg = sends.send(ana, "g", "cm-1", "the secret").seq();
        long other = sends.send(bo, "g", "cm-b", "keep me").seq();
        changes.edit(ana, "g", "cm-2", msg, "the secret, edited");
        SendResult recall = changes.recall(ana, "g", "cm-3", msg);

        List<Event> log = reader.sync(bo, "g", 0, 100).events();
        assertEquals(List.of("", true), List.of(log.get(1).body(), log.get(1).recalled()), "the message is a tombstone");
        assertEquals(List.of("keep me", false), List.of(log.get(2).body(), log.get(2).recalled()), "bo's message at " + other + " is untouched");
        assertEquals(List.of(Event.EDIT, "", true), List.of(log.get(3).kind(), log.get(3).body(), log.get(3).recalled()), "its edit too");
        assertEquals(List.of(Event.RECALL, msg, "", recall.seq()), List.of(log.get(4).kind(), log.get(4).ref(), log.get(4).body(), log.get(4).seq()));
        Event caughtUp = reader.catchUp(bo, null, 100, Long.MAX_VALUE).events().get(1);
        assertEquals(List.of(msg, "", true), List.of(caughtUp.seq(), caughtUp.body(), caughtUp.recalled()), "catch-up reads the tombstone too");
        assertEquals(0, count("SELECT count(*) FROM events WHERE body LIKE '%secret%'"), "no row holds the body any more");

        SendResult resend = sends.send(ana, "g", "cm-1", "the secret");
        assertEquals(List.of(msg, true), List.of(resend.seq(), resend.dup()),
                "a resend of the recalled message is still its dup (not a conflict, not a new message)");
        assertEquals(1, unread("u-bo", 0, recall.seq()), "ana's tombstone still counts for bo where the message did; the edit and recall count as none");
    }

    @Test
    void aSecondRecallAnswersTheFirstAndWritesNothing() throws SQLException {
        long msg = sends.send(ana, "g", "cm-1", "oops").seq();
        SendResult first = changes.recall(ana, "g", "cm-2", msg);
        long head = head();
        SendResult second = changes.recall(ana, "g", "cm-3", msg);
        assertEquals(List.of(first.seq(), first.mid(), true), List.of(second.seq(), second.mid(), second.dup()));
        assertEquals(head, head(), "no seq taken");
        SendResult again = changes.recall(ana, "g", "cm-2", msg);
        assertEquals(List.of(first.seq(), true), List.of(again.seq(), again.dup()), "a resend of the first recall's cmid");
    }

    @Test
    void aResendOfAnEditIsItsDupAndAnotherBodyUnderItsCmidConflicts() {
        long msg = sends.send(ana, "g", "cm-1", "a").seq();
        SendResult edit = changes.edit(ana, "g", "cm-2", msg, "b");
        SendResult resend = changes.edit(ana, "g", "cm-2", msg, "b");
        assertEquals(List.of(edit.seq(), true), List.of(resend.seq(), resend.dup()));
        refused(ErrorCode.CMID_CONFLICT, () -> changes.edit(ana, "g", "cm-2", msg, "c"));
        refused(ErrorCode.CMID_CONFLICT, () -> sends.send(ana, "g", "cm-2", "b"), "a message under an edit's cmid");
        refused(ErrorCode.CMID_CONFLICT, () -> changes.recall(ana, "g", "cm-1", msg), "a recall under the message's own cmid");
    }

    @Test
    void onlyTheSenderMayChangeAMessageOfTheirsWhileAMemberAndWithinTheWindow() throws SQLException {
        long msg = sends.send(ana, "g", "cm-1", "a").seq();
        refused(ErrorCode.NOT_SENDER, () -> changes.edit(bo, "g", "cm-b1", msg, "b"));
        refused(ErrorCode.NOT_SENDER, () -> changes.recall(bo, "g", "cm-b2", msg));
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.edit(ana, "g", "cm-2", 1, "b"), "seq 1 is the join");
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.recall(ana, "g", "cm-3", msg + 50), "above the head");
        refused(ErrorCode.UNKNOWN_CONV, () -> changes.recall(ana, "nope", "cm-4", 1));
        long edit = changes.edit(ana, "g", "cm-5", msg, "b").seq();
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.edit(ana, "g", "cm-6", edit, "c"), "an edit refers to the message, not to an edit");

        Clock later = Clock.fixed(Instant.now().plus(WINDOW).plusSeconds(60), ZoneOffset.UTC);
        MessageChanges late = new MessageChanges(db, Faults.none(), later, WINDOW, WINDOW);
        refused(ErrorCode.TOO_LATE, () -> late.edit(ana, "g", "cm-7", msg, "c"));
        refused(ErrorCode.TOO_LATE, () -> late.recall(ana, "g", "cm-8", msg));
        MessageChanges never = new MessageChanges(db, Faults.none(), Clock.systemUTC(), Duration.ZERO, WINDOW);
        refused(ErrorCode.TOO_LATE, () -> never.edit(ana, "g", "cm-9", msg, "c"), "a zero window: no edits");

        changes.recall(ana, "g", "cm-10", msg);
        refused(ErrorCode.RECALLED, () -> changes.edit(ana, "g", "cm-11", msg, "c"));

        long other = sends.send(ana, "g", "cm-12", "x").seq();
        dir.removeMember("g", "u-ana");
        refused(ErrorCode.NOT_MEMBER, () -> changes.recall(ana, "g", "cm-13", other), "a former member changes nothing");
    }

    /**
     * Moderation: an admin recalls any message, whoever sent it, after the window and after its
     * sender left; the recall is in the sender's name with no device, and the message is a
     * tombstone on every read path as after the sender's own recall.
     */
    @Test
    void anAdminRecallsAnyMessageAtAnyTimeInTheSendersNameWithNoDevice() throws SQLException {
        long msg = sends.send(ana, "g", "cm-1", "something awful").seq();
        dir.removeMember("g", "u-ana");
        Clock later = Clock.fixed(Instant.now().plus(WINDOW).plusSeconds(60), ZoneOffset.UTC);
        MessageChanges late = new MessageChanges(db, Faults.none(), later, WINDOW, WINDOW);
        SendResult recall = late.recallAsAdmin("g", msg);
        assertEquals(List.of(head(), false), List.of(recall.seq(), recall.dup()));
        List<Event> log = reader.sync(bo, "g", 0, 100).events();
        Event tomb = log.stream().filter(e -> e.seq() == msg).findFirst().orElseThrow();
        Event last = log.get(log.size() - 1);
        assertEquals(List.of("", true), List.of(tomb.body(), tomb.recalled()));
        assertEquals(List.of(Event.RECALL, msg, "u-ana"), List.of(last.kind(), last.ref(), last.sender()));
        assertEquals(true, last.cmid().startsWith(MessageChanges.ADMIN_CMID_PREFIX), last.cmid());
        assertEquals(1, count("SELECT count(*) FROM events WHERE kind = 'recall' AND sender_device IS NULL"), "no device asked for it");
        assertEquals(0, count("SELECT count(*) FROM events WHERE body LIKE '%awful%'"));

        SendResult again = changes.recallAsAdmin("g", msg);
        assertEquals(List.of(recall.seq(), recall.mid(), true), List.of(again.seq(), again.mid(), again.dup()), "a second one is its dup");
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.recallAsAdmin("g", 1), "seq 1 is the join");
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.recallAsAdmin("g", recall.seq()), "a recall is no message");
        refused(ErrorCode.NOT_A_MESSAGE, () -> changes.recallAsAdmin("g", 1000), "above the head");
        refused(ErrorCode.UNKNOWN_CONV, () -> changes.recallAsAdmin("nope", 1));
    }

    private void refused(ErrorCode code, Supplier<SendResult> change) {
        refused(code, change, code.name());
    }

    private void refused(ErrorCode code, Supplier<SendResult> change, String why) {
        long head;
        long events;
        try {
            head = head();
            events = count("SELECT count(*) FROM events");
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
        SendRejectedException e = assertThrows(SendRejectedException.class, change::get, why);
        assertEquals(code, e.errorCode(), why + ": " + e.getMessage());
        assertFalse(e.getMessage().isBlank());
        try {
            assertEquals(List.of(head, events), List.of(head(), count("SELECT count(*) FROM events")), why + ": a refusal writes nothing");
        } catch (SQLException x) {
            throw new AssertionError(x);
        }
    }

    private long head() throws SQLException {
        return count("SELECT head_seq FROM conversations WHERE conv_id = 'g'");
    }

    private long unread(String user, long low, long high) throws SQLException {
        return count("SELECT unread_between('g', '" + user + "', " + low + ", " + high + ")");
    }

    private long count(String sql) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
