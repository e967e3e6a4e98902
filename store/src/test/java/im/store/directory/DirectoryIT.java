package im.store.directory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.identity.DevicePrincipal;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(ImStackExtension.class)
class DirectoryIT {
    private DataSource db;
    private Directory dir;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        for (String u : List.of("u-ana", "u-bo", "u-cy")) dir.createUser(u, u.substring(2));
    }

    private DirectoryException.Code code(Runnable r) {
        return assertThrows(DirectoryException.class, r::run).code();
    }

    @Test
    void tokenAuthenticatesItsDeviceAndInstall() {
        DeviceRegistration reg = dir.registerDevice("u-ana", "d-ana-phone");
        assertEquals(1, reg.epoch());
        assertTrue(reg.token().startsWith("imt_"));
        assertEquals(new DevicePrincipal("u-ana", "d-ana-phone", 1), dir.authenticate(reg.token()));
        assertEquals(DirectoryException.Code.BAD_TOKEN, code(() -> dir.authenticate("imt_wrong")));
        assertEquals(DirectoryException.Code.BAD_TOKEN, code(() -> dir.authenticate("")));
        assertEquals(DirectoryException.Code.BAD_TOKEN, code(() -> dir.authenticate(null)));
    }

    /** A clock the test moves forward. */
    private static final class MovableClock extends Clock {
        private volatile Instant now = Instant.parse("2026-01-01T00:00:00Z");

        void advance(Duration d) { now = now.plus(d); }
        @Override public Instant instant() { return now; }
        @Override public ZoneId getZone() { return ZoneOffset.UTC; }
        @Override public Clock withZone(ZoneId zone) { return this; }
    }

    @Test
    void tokensExpireAfterTheirTtlAndRenewalReplacesThem() {
        MovableClock clock = new MovableClock();
        Directory timed = new Directory(db, clock, Duration.ofHours(1));
        DeviceRegistration reg = timed.registerDevice("u-ana", "d-exp");
        assertEquals(Instant.parse("2026-01-01T01:00:00Z"), reg.expires());
        clock.advance(Duration.ofMinutes(59));
        assertEquals("d-exp", timed.authenticate(reg.token()).deviceId());
        clock.advance(Duration.ofMinutes(1));   // exactly at the expiry: no longer valid
        DirectoryException expired = assertThrows(DirectoryException.class, () -> timed.authenticate(reg.token()));
        assertEquals(DirectoryException.Code.BAD_TOKEN, expired.code());
        assertTrue(expired.getMessage().contains("expired"), expired.getMessage());

        DeviceRegistration renewed = timed.renewToken("d-exp");
        assertEquals(1, renewed.epoch(), "renewal keeps the install");
        assertEquals(clock.instant().plus(Duration.ofHours(1)), renewed.expires());
        assertEquals(new DevicePrincipal("u-ana", "d-exp", 1, 1), timed.authenticate(renewed.token()), "the same install, its next credential");
        DirectoryException old = assertThrows(DirectoryException.class, () -> timed.authenticate(reg.token()));
        assertEquals(DirectoryException.Code.BAD_TOKEN, old.code(), "the replaced token is unknown, not stale");
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> timed.renewToken("d-none")));

        // a reinstall issues a token with a fresh lifetime too
        clock.advance(Duration.ofMinutes(30));
        DeviceRegistration re = timed.reinstallDevice("d-exp");
        assertEquals(clock.instant().plus(Duration.ofHours(1)), re.expires());
        clock.advance(Duration.ofMinutes(45));
        assertEquals(2, timed.authenticate(re.token()).installEpoch());

        // TTL zero: never expires
        Directory forever = new Directory(db, clock, Duration.ZERO);
        DeviceRegistration f = forever.registerDevice("u-bo", "d-forever");
        assertNull(f.expires());
        clock.advance(Duration.ofDays(3650));
        assertEquals("d-forever", timed.authenticate(f.token()).deviceId());
    }

    @Test
    void tokenIsStoredOnlyHashed() throws Exception {
        DeviceRegistration reg = dir.registerDevice("u-ana", "d1");
        try (Connection c = db.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT token_hash FROM devices WHERE device_id = 'd1'")) {
            rs.next();
            assertEquals(32, rs.getBytes(1).length);
            assertFalse(new String(rs.getBytes(1), java.nio.charset.StandardCharsets.ISO_8859_1).contains(reg.token()));
        }
    }

    @Test
    void reinstallRetiresTheOldTokenAsStaleAndClearsCursors() throws Exception {
        DeviceRegistration first = dir.registerDevice("u-ana", "d1");
        dir.createConversation("c1", "group", List.of("u-ana"));
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('d1', 'c1', 1, 1)");
        }
        DeviceRegistration second = dir.reinstallDevice("d1");
        assertEquals(2, second.epoch());
        assertEquals(DirectoryException.Code.STALE_INSTALL, code(() -> dir.authenticate(first.token())));
        assertEquals(2, dir.authenticate(second.token()).installEpoch());
        try (Connection c = db.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM device_cursors WHERE device_id = 'd1'")) {
            rs.next();
            assertEquals(0, rs.getInt(1), "a new install holds nothing");
        }
        DeviceRegistration third = dir.reinstallDevice("d1");
        assertEquals(DirectoryException.Code.STALE_INSTALL, code(() -> dir.authenticate(second.token())));
        assertEquals(3, dir.authenticate(third.token()).installEpoch());
    }

    @Test
    void registrationErrors() {
        dir.registerDevice("u-ana", "d1");
        assertEquals(DirectoryException.Code.ALREADY_EXISTS, code(() -> dir.registerDevice("u-bo", "d1")));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> dir.registerDevice("u-nobody", "d2")));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> dir.reinstallDevice("d-none")));
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.registerDevice("u-ana", "bad id")));
        assertEquals(DirectoryException.Code.ALREADY_EXISTS, code(() -> dir.createUser("u-ana", "again")));
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.createUser("x".repeat(65), "")));
    }

    @Test
    void membershipChangesAreEventsInTheLog() {
        ConversationInfo c = dir.createConversation("g1", "group", List.of("u-ana", "u-bo"));
        assertEquals(1, c.head(), "one (bulk) join event for the initial members");
        assertEquals(List.of(new Membership("u-ana", 1, null), new Membership("u-bo", 1, null)), c.memberships());

        MembershipChange join = dir.addMember("g1", "u-cy");
        assertEquals(2, join.seq());
        assertTrue(join.changed());
        MembershipChange again = dir.addMember("g1", "u-cy");
        assertFalse(again.changed(), "adding a current member is a no-op");
        assertEquals(2, again.seq());

        MembershipChange leave = dir.removeMember("g1", "u-bo");
        assertEquals(3, leave.seq());
        assertEquals(DirectoryException.Code.NOT_MEMBER, code(() -> dir.removeMember("g1", "u-bo")));
        MembershipChange rejoin = dir.addMember("g1", "u-bo");
        assertEquals(4, rejoin.seq());

        ConversationInfo after = dir.conversation("g1");
        assertEquals(4, after.head());
        assertEquals(List.of(new Membership("u-ana", 1, null), new Membership("u-bo", 1, 3L),
                new Membership("u-cy", 2, null), new Membership("u-bo", 4, null)), after.memberships());
    }

    @Test
    void conversationValidation() {
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.createConversation("d", "direct", List.of("u-ana"))));
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.createConversation("d", "group", List.of())));
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.createConversation("d", "group", List.of("u-ana", "u-ana"))));
        assertEquals(DirectoryException.Code.INVALID, code(() -> dir.createConversation("d", "channel", List.of("u-ana"))));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> dir.createConversation("d", "group", List.of("u-ana", "u-ghost"))));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> dir.conversation("d")), "failed creation left nothing");
        dir.createConversation("d", "group", List.of("u-ana"));
        assertEquals(DirectoryException.Code.ALREADY_EXISTS, code(() -> dir.createConversation("d", "group", List.of("u-bo"))));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> dir.addMember("nope", "u-ana")));
        assertNull(dir.conversation("d").memberships().get(0).toSeq());
    }

    @Test
    void aGroupHoldsAtMostTheConfiguredMembersAndACreateRequestAtMostOneThousand() {
        Directory small = new Directory(db, Clock.systemUTC(), Duration.ZERO, 3);
        small.createUser("u-dee", "dee");
        assertEquals(DirectoryException.Code.GROUP_FULL,
                code(() -> small.createConversation("g4", "group", List.of("u-ana", "u-bo", "u-cy", "u-dee"))));
        small.createConversation("g3", "group", List.of("u-ana", "u-bo", "u-cy"));
        assertEquals(DirectoryException.Code.GROUP_FULL, code(() -> small.addMember("g3", "u-dee")));
        assertFalse(small.addMember("g3", "u-ana").changed(), "a current member is no addition");
        small.removeMember("g3", "u-bo");
        assertTrue(small.addMember("g3", "u-dee").changed(), "a leave makes room");
        assertEquals(DirectoryException.Code.GROUP_FULL, code(() -> small.addMember("g3", "u-bo")));
        assertEquals(3, small.conversation("g3").memberships().stream().filter(m -> m.toSeq() == null).count());

    }
}
