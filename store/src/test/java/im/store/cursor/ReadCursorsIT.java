package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ReadState;
import im.store.directory.DeviceRegistration;
import im.store.directory.Directory;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.CursorRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The read cursors against the definition of docs/protocol.md, "Read state and unread counts":
 * after every step of a seeded mix of sends, reads, leaves and rejoins in a group, every user's
 * read state (from {@link ReadCursors#markRead} and {@link ReadCursors#states}) equals a count
 * over the conversation's events done here in Java: the messages of others the user may see, in
 * any of its periods, with {@code read < seq <= the last seq the user may see}.
 */
@ExtendWith(ImStackExtension.class)
class ReadCursorsIT {
    private static final List<String> USERS = List.of("u-ana", "u-bo", "u-cy", "u-dan");

    private DataSource db;
    private Directory dir;
    private SendService sends;
    private final List<CursorRecord> published = Collections.synchronizedList(new ArrayList<>());
    private ReadCursors reads;
    private final Map<String, DevicePrincipal> device = new HashMap<>();

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        sends = new SendService(db, Faults.none(), Clock.systemUTC());
        reads = new ReadCursors(db, published::addAll);
        for (String u : USERS) {
            dir.createUser(u, u);
            DeviceRegistration r = dir.registerDevice(u, "d" + u.substring(1));
            device.put(u, dir.authenticate(r.token()));
        }
        dir.createConversation("g", "group", USERS.subList(0, 3));   // one bulk join of ana, bo, cy: seq 1
    }

    @AfterEach
    void close() {
        sends.close();
    }

    @Test
    void everyReadStateEqualsTheCountOverTheLogThroughSendsReadsLeavesAndRejoins() throws SQLException {
        Random random = new Random(29);
        for (int step = 0; step < 300; step++) {
            String user = USERS.get(random.nextInt(USERS.size()));
            int what = random.nextInt(20);
            if (what < 11) {
                if (isMember(user)) sends.send(device.get(user), "g", UUID.randomUUID().toString(), "m" + step);
            } else if (what < 17) {
                if (everMember(user)) {
                    long head = head();
                    long seq = head == 0 ? 0 : random.nextInt((int) head + 1);
                    ReadState s = reads.markRead(device.get(user), "g", seq).state();
                    assertEquals(expected(user), s, "step " + step + ": " + user + " read " + seq);
                }
            } else if (what < 19) {
                if (isMember(user) && !user.equals("u-ana")) dir.removeMember("g", user);
            } else if (!isMember(user)) {
                dir.addMember("g", user);
            }
            for (ReadCursors.ConvReadState r : reads.states(user, List.of("g"))) {
                assertEquals(expected(user), r.state(), "step " + step + ": states of " + user);
            }
        }
    }

    @Test
    void theCursorOnlyMovesUpAndEachMovePublishesOneRecord() {
        DevicePrincipal ana = device.get("u-ana");
        DevicePrincipal bo = device.get("u-bo");
        for (int i = 0; i < 5; i++) sends.send(bo, "g", "c" + i, "hello " + i);   // seqs 2..6
        assertEquals(new ReadState(4, 2, 6), reads.markRead(ana, "g", 4).state());
        ReadCursors.Marked lower = reads.markRead(ana, "g", 2);
        assertEquals(new ReadState(4, 2, 6), lower.state(), "a lower read leaves the cursor");
        assertEquals(false, lower.moved());
        assertEquals(new ReadState(6, 0, 6), reads.markRead(ana, "g", 6).state());
        assertEquals(List.of(4L, 6L), published.stream().map(r -> ((CursorRecord.Read) r).read()).toList());
        assertEquals("u-ana", ((CursorRecord.Read) published.get(0)).user());
    }

    @Test
    void ownMessagesJoinsAndLeavesAreNeverUnread() {
        DevicePrincipal ana = device.get("u-ana");
        sends.send(ana, "g", "a1", "mine");                // 2
        dir.addMember("g", "u-dan");                        // 3
        sends.send(device.get("u-bo"), "g", "b1", "bo's"); // 4
        dir.removeMember("g", "u-cy");                      // 5
        sends.send(ana, "g", "a2", "mine again");          // 6
        assertEquals(new ReadState(0, 1, 6), reads.markRead(ana, "g", 0).state());
    }

    /**
     * Messages of an earlier period that the user has not read stay unread after a leave and a
     * rejoin, as every device of the user counts them (the campaign's checker caught the server
     * counting only the last period: one device said 0, the other 47).
     */
    @Test
    void unreadMessagesOfAnEarlierPeriodStillCountAfterARejoin() throws SQLException {
        DevicePrincipal bo = device.get("u-bo");
        reads.markRead(bo, "g", 1);
        sends.send(device.get("u-ana"), "g", "a1", "one");     // 2
        sends.send(device.get("u-ana"), "g", "a2", "two");     // 3
        dir.removeMember("g", "u-bo");                          // 4
        sends.send(device.get("u-ana"), "g", "a3", "unseen");  // 5: bo may not see it
        dir.addMember("g", "u-bo");                             // 6
        sends.send(device.get("u-ana"), "g", "a4", "three");   // 7
        assertEquals(new ReadState(1, 3, 7), expected("u-bo"), "the definition: 2, 3 and 7");
        assertEquals(new ReadState(1, 3, 7), reads.states("u-bo", List.of("g")).get(0).state());
        assertEquals(new ReadState(2, 2, 7), reads.markRead(bo, "g", 2).state());
        assertEquals(new ReadState(5, 1, 7), reads.markRead(bo, "g", 5).state(), "a read inside the gap reads the first period");
    }

    @Test
    void aFormerMembersCursorStopsAtItsLeaveAndItsStateAtItsLeave() {
        DevicePrincipal bo = device.get("u-bo");
        sends.send(device.get("u-ana"), "g", "a1", "one");   // 2
        dir.removeMember("g", "u-bo");                        // 3
        sends.send(device.get("u-ana"), "g", "a2", "after"); // 4
        assertEquals(new ReadState(0, 1, 3), reads.states("u-bo", List.of("g")).get(0).state());
        assertEquals(new ReadState(3, 0, 3), reads.markRead(bo, "g", 4).state());
    }

    @Test
    void refusesAReadAboveTheHeadOfANonMemberOrOfAnOldInstall() {
        assertEquals(ErrorCode.CURSOR_AHEAD, assertThrows(AckRejectedException.class,
                () -> reads.markRead(device.get("u-ana"), "g", 2)).errorCode());
        assertEquals(ErrorCode.NOT_MEMBER, assertThrows(AckRejectedException.class,
                () -> reads.markRead(device.get("u-dan"), "g", 1)).errorCode());
        assertEquals(ErrorCode.NOT_MEMBER, assertThrows(AckRejectedException.class,
                () -> reads.markRead(device.get("u-ana"), "nope", 0)).errorCode());
        dir.reinstallDevice("d-ana");
        assertEquals(ErrorCode.STALE_INSTALL, assertThrows(AckRejectedException.class,
                () -> reads.markRead(device.get("u-ana"), "g", 1)).errorCode());
        assertEquals(List.of(), reads.states("u-dan", List.of("g")), "never a member: no state");
    }

    /**
     * The definition of docs/protocol.md, counted over the log in Java: the messages of others the
     * user may see (in any of its periods) with read &lt; seq &le; the last seq it may see.
     */
    private ReadState expected(String user) throws SQLException {
        long head = head();
        long visible = -1;
        List<long[]> periods = new ArrayList<>();
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT from_seq, to_seq FROM memberships WHERE conv_id = 'g' AND user_id = ?")) {
            ps.setString(1, user);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long to = rs.getLong(2);
                    long end = rs.wasNull() ? head : Math.min(to, head);
                    visible = Math.max(visible, end);
                    periods.add(new long[] {rs.getLong(1), end});
                }
            }
        }
        long read = 0;
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT read_seq FROM read_cursors WHERE conv_id = 'g' AND user_id = ?")) {
            ps.setString(1, user);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) read = rs.getLong(1);
            }
        }
        long unread = 0;
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT seq, kind, sender FROM events WHERE conv_id = 'g' ORDER BY seq")) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long seq = rs.getLong(1);
                    boolean seen = periods.stream().anyMatch(p -> p[0] <= seq && seq <= p[1]);
                    if (seq > read && seen && rs.getString(2).equals("msg") && !rs.getString(3).equals(user)) unread++;
                }
            }
        }
        return new ReadState(read, unread, visible);
    }

    private long head() throws SQLException {
        return scalar("SELECT head_seq FROM conversations WHERE conv_id = 'g'", null);
    }

    private boolean isMember(String user) throws SQLException {
        return scalar("SELECT count(*) FROM memberships WHERE conv_id = 'g' AND user_id = ? AND to_seq IS NULL", user) > 0;
    }

    private boolean everMember(String user) throws SQLException {
        return scalar("SELECT count(*) FROM memberships WHERE conv_id = 'g' AND user_id = ?", user) > 0;
    }

    private long scalar(String sql, String arg) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (arg != null) ps.setString(1, arg);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
