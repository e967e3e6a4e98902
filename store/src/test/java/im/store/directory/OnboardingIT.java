package im.store.directory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Bulk onboarding: users, devices with their tokens and memberships many at a time, all or
 * nothing; the new members of one call share one join event (the fewest above the per-event cap).
 */
@ExtendWith(ImStackExtension.class)
class OnboardingIT {
    private DataSource db;
    private Directory dir;
    private Onboarding bulk;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        bulk = dir.onboarding();
    }

    private static List<String> ids(String prefix, int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> prefix + i).toList();
    }

    private static List<Onboarding.NewUser> users(List<String> ids) {
        return ids.stream().map(u -> new Onboarding.NewUser(u, "name of " + u)).toList();
    }

    @Test
    void usersAndDevicesManyAtATimeRunAgainWithoutHarm() {
        List<String> us = ids("u-", 0, 2_000);
        Onboarding.CreatedUsers first = bulk.createUsers(users(us));
        assertEquals(2_000, first.created().size());
        Onboarding.CreatedUsers again = bulk.createUsers(users(ids("u-", 1_990, 2_010)));
        assertEquals(ids("u-", 2_000, 2_010), again.created(), "the new ones are created");
        assertEquals(ids("u-", 1_990, 2_000), again.existing(), "the existing ones are reported, untouched");

        List<Onboarding.NewDevice> ds = new ArrayList<>();
        for (String u : us) ds.add(new Onboarding.NewDevice(u, "d-" + u));
        Onboarding.RegisteredDevices reg = bulk.registerDevices(ds);
        assertEquals(2_000, reg.registered().size());
        DeviceRegistration some = reg.registered().get(1_234);
        assertEquals(new im.infra.identity.DevicePrincipal(some.user(), some.device(), 1), dir.authenticate(some.token()),
                "each token authenticates its own device");
        Onboarding.RegisteredDevices twice = bulk.registerDevices(ds.subList(0, 3));
        assertEquals(0, twice.registered().size());
        assertEquals(List.of("d-u-0", "d-u-1", "d-u-2"), twice.existing());
    }

    @Test
    void aBadItemRefusesTheWholeCallAndWritesNothing() {
        bulk.createUsers(users(ids("u-", 0, 10)));
        DirectoryException dup = assertThrows(DirectoryException.class, () -> bulk.createUsers(users(List.of("u-x", "u-y", "u-x"))));
        assertEquals(DirectoryException.Code.INVALID, dup.code());
        assertTrue(dup.getMessage().contains("listed twice: u-x"), dup.getMessage());
        List<Onboarding.NewDevice> ds = new ArrayList<>();
        for (String u : ids("u-", 0, 30)) ds.add(new Onboarding.NewDevice(u, "d-" + u));
        DirectoryException missing = assertThrows(DirectoryException.class, () -> bulk.registerDevices(ds));
        assertEquals(DirectoryException.Code.NOT_FOUND, missing.code());
        assertTrue(missing.getMessage().startsWith("no users u-10, u-11"), missing.getMessage());
        assertTrue(missing.getMessage().endsWith("(20 in all)"), missing.getMessage());
        assertEquals(0, count("SELECT count(*) FROM devices"), "not one device of the refused call");
        assertEquals(DirectoryException.Code.INVALID,
                assertThrows(DirectoryException.class, () -> bulk.createUsers(users(List.of("has space")))).code());
    }

    @Test
    void aGroupOfThousandsInOneCreateAndOneAddIsOneJoinEventEachWithEveryMembersPeriodFromIt() {
        bulk.createUsers(users(ids("u-", 0, 3_000)));
        ConversationInfo created = dir.createConversation("g-all", "group", ids("u-", 0, 1_500));
        assertEquals(1, created.head(), "one join event for the 1,500 initial members");
        assertEquals(1_500, created.memberships().size());

        List<String> more = new ArrayList<>(ids("u-", 1_490, 3_000));   // ten are members already
        Onboarding.AddedMembers added = bulk.addMembers("g-all", more);
        assertEquals(1_500, added.added().size());
        assertEquals(10, added.already().size());
        assertEquals(1, added.already().get("u-1490"), "a current member keeps its join");
        assertEquals(2, added.added().get("u-1500"), "the added members share the next seq");
        assertEquals(2, added.added().get("u-2999"));
        assertEquals(2, added.head());
        assertEquals(2, count("SELECT count(*) FROM events WHERE conv_id = 'g-all' AND kind = 'join'"));
        assertEquals(1_500, count("SELECT users_count FROM events WHERE conv_id = 'g-all' AND seq = 2"));
        assertEquals(1_500, count("SELECT count(*) FROM events e, unnest(e.users) WITH ORDINALITY AS u(id, o)"
                + " WHERE e.conv_id = 'g-all' AND e.seq = 2 AND u.id = 'u-' || (1499 + u.o)"), "the users in the order given");
        assertEquals(0, count("SELECT count(*) FROM events e CROSS JOIN unnest(e.users) AS u(id)"
                + " JOIN memberships m ON m.conv_id = e.conv_id AND m.user_id = u.id"
                + " WHERE e.conv_id = 'g-all' AND m.from_seq <> e.seq"), "every period starts at the join that lists its member");
        assertEquals(3_000, count("SELECT count(*) FROM memberships WHERE conv_id = 'g-all' AND to_seq IS NULL"));
        assertEquals(3_000, count("SELECT members FROM conversations WHERE conv_id = 'g-all'"));
        assertEquals(2, dir.conversation("g-all").head());
    }

    @Test
    void aBulkAboveTheCapIsSplitIntoTheFewestEventsAndOneMemberKeepsTheSingleShape() {
        int n = 2 * Onboarding.MAX_USERS_PER_EVENT + 1;   // needs three events
        bulk.createUsers(users(ids("u-", 0, n + 2)));
        dir.createConversation("g-big", "group", List.of("u-0"));
        assertEquals(1, count("SELECT count(*) FROM events WHERE conv_id = 'g-big' AND seq = 1 AND sender = 'u-0'"
                + " AND users IS NULL AND users_count IS NULL"), "a join of one member has the single shape");

        Onboarding.AddedMembers added = bulk.addMembers("g-big", ids("u-", 1, n + 1));
        assertEquals(4, added.head(), "seqs 2, 3, 4");
        assertEquals(List.of(3_334L, 3_334L, 3_333L), longs("SELECT users_count FROM events WHERE conv_id = 'g-big' AND seq > 1 ORDER BY seq"),
                "the fewest events under the cap, sizes differing by at most one");
        assertEquals(2, added.added().get("u-1"));
        assertEquals(3, added.added().get("u-3335"));
        assertEquals(4, added.added().get("u-" + n));
        assertEquals(0, count("SELECT count(*) FROM events e CROSS JOIN unnest(e.users) AS u(id)"
                + " JOIN memberships m ON m.conv_id = e.conv_id AND m.user_id = u.id"
                + " WHERE e.conv_id = 'g-big' AND m.from_seq <> e.seq"), "every period starts at the join that lists its member");

        Onboarding.AddedMembers single = bulk.addMembers("g-big", List.of("u-" + (n + 1)));
        assertEquals(5, single.head());
        assertEquals(1, count("SELECT count(*) FROM events WHERE conv_id = 'g-big' AND seq = 5 AND sender = 'u-" + (n + 1)
                + "' AND users IS NULL"), "a bulk call that adds one user writes the single shape");
    }

    @Test
    void aDirectConversationsTwoMembersKeepASingleJoinEach() {
        bulk.createUsers(users(ids("u-", 0, 2)));
        assertEquals(2, dir.createConversation("d-01", "direct", ids("u-", 0, 2)).head());
        assertEquals(0, count("SELECT count(*) FROM events WHERE conv_id = 'd-01' AND users IS NOT NULL"));
        assertEquals(2, count("SELECT count(*) FROM events e JOIN memberships m ON m.conv_id = e.conv_id AND m.user_id = e.sender"
                + " AND m.from_seq = e.seq WHERE e.conv_id = 'd-01'"));
    }

    @Test
    void aFullGroupRefusesTheWholeAdd() {
        Directory small = new Directory(db, Clock.systemUTC(), Directory.DEFAULT_TOKEN_TTL, 5);
        bulk.createUsers(users(ids("u-", 0, 10)));
        small.createConversation("g5", "group", ids("u-", 0, 3));
        DirectoryException full = assertThrows(DirectoryException.class, () -> small.onboarding().addMembers("g5", ids("u-", 0, 6)));
        assertEquals(DirectoryException.Code.GROUP_FULL, full.code());
        assertTrue(full.getMessage().contains("it has 3, and 3 would join"), full.getMessage());
        assertEquals(1, small.conversation("g5").head(), "nothing written");
        assertEquals(2, small.onboarding().addMembers("g5", ids("u-", 0, 5)).added().size(), "up to the limit");
        assertEquals(DirectoryException.Code.NOT_FOUND,
                assertThrows(DirectoryException.class, () -> bulk.addMembers("g-none", List.of("u-1"))).code());
    }

    private List<Long> longs(String sql) {
        List<Long> out = new ArrayList<>();
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) out.add(rs.getLong(1));
            return out;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long count(String sql) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
