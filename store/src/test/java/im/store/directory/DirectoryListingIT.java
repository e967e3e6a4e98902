package im.store.directory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The read-only listings behind the admin API's GET endpoints and {@code im lag}. */
@ExtendWith(ImStackExtension.class)
class DirectoryListingIT {
    private DataSource db;
    private Directory dir;
    private DirectoryListing listing;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        listing = new DirectoryListing(db);
    }

    private DirectoryException.Code code(Runnable r) {
        return assertThrows(DirectoryException.class, r::run).code();
    }

    private void cursor(String device, String conv, int epoch, long delivered) throws Exception {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, device);
            ps.setString(2, conv);
            ps.setInt(3, epoch);
            ps.setLong(4, delivered);
            ps.executeUpdate();
        }
    }

    @Test
    void usersPageInIdOrderUntilNextIsNull() {
        for (int i = 0; i < 7; i++) dir.createUser("u-" + i, "User " + i);
        dir.registerDevice("u-3", "d-3a");
        dir.registerDevice("u-3", "d-3b");
        List<String> seen = new ArrayList<>();
        String after = null;
        int pages = 0;
        do {
            Page<UserSummary> p = listing.listUsers(after, 3);
            assertTrue(p.items().size() <= 3);
            p.items().forEach(u -> seen.add(u.user()));
            after = p.next();
            pages++;
        } while (after != null);
        assertEquals(List.of("u-0", "u-1", "u-2", "u-3", "u-4", "u-5", "u-6"), seen);
        assertEquals(3, pages);
        UserSummary u3 = listing.listUsers("u-2", 1).items().get(0);
        assertEquals(new UserSummary("u-3", "User 3", 2), u3);
        assertNull(listing.listUsers("u-6", 10).next());
        assertTrue(listing.listUsers("u-6", 10).items().isEmpty());
        assertEquals("u-5", listing.listUsers("u-3", 2).next(), "a full page with more after it names its last id");
    }

    @Test
    void mostLaggingRanksDevicesOverEveryConversationByLagAndLeavesOutTheCaughtUp() throws Exception {
        for (String u : List.of("u-ana", "u-bo", "u-cy", "u-dee")) dir.createUser(u, u);
        dir.registerDevice("u-ana", "d-ana");
        dir.registerDevice("u-bo", "d-bo");
        dir.registerDevice("u-cy", "d-cy");
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));          // seqs 1..2 (direct: a join each)
        dir.createConversation("c-g", "group", List.of("u-ana", "u-bo", "u-cy"));    // seq 1: one join of the three
        dir.addMember("c-g", "u-dee");                                                // seq 2 (no device)
        dir.removeMember("c-g", "u-cy");                                              // seq 3
        dir.addMember("c-g", "u-cy");                                                 // seq 4
        cursor("d-ana", "c-ab", 1, 2);                                                // caught up
        cursor("d-bo", "c-g", 1, 1);                                                  // lag 3
        cursor("d-cy", "c-g", 1, 3);                                                  // lag 1

        List<LaggingDevice> top = listing.mostLagging(10);
        List<String> seen = new ArrayList<>();
        for (LaggingDevice d : top) seen.add(d.conv() + "/" + d.cursor().device() + "/" + d.cursor().lag());
        assertEquals(List.of("c-g/d-ana/4", "c-g/d-bo/3", "c-ab/d-bo/2", "c-g/d-cy/1"), seen);
        assertTrue(top.get(0).behindMillis() >= 0 && top.get(0).behindMillis() < 60_000, "event 1 of c-g was just committed");
        assertEquals(List.of("c-g/d-ana/4", "c-g/d-bo/3"), listing.mostLagging(2).stream()
                .map(d -> d.conv() + "/" + d.cursor().device() + "/" + d.cursor().lag()).toList());
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.mostLagging(0)));
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.mostLagging(DirectoryListing.MAX_PAGE + 1)));
    }

    @Test
    void listingsRejectBadPagingWithInvalid() {
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.listUsers(null, 0)));
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.listUsers(null, DirectoryListing.MAX_PAGE + 1)));
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.listConversations("has space", 10)));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> listing.devices("u-nobody")));
        assertEquals(DirectoryException.Code.NOT_FOUND, code(() -> listing.cursors("c-none")));
        assertEquals(DirectoryException.Code.INVALID, code(() -> listing.cursors("")));
    }

    @Test
    void devicesOfAUserShowTheirInstallEpoch() {
        dir.createUser("u-ana", "Ana");
        assertTrue(listing.devices("u-ana").isEmpty());
        dir.registerDevice("u-ana", "d-phone");
        dir.registerDevice("u-ana", "d-laptop");
        dir.reinstallDevice("d-phone");
        List<DeviceSummary> ds = listing.devices("u-ana");
        assertEquals(List.of("d-laptop", "d-phone"), ds.stream().map(DeviceSummary::device).toList());
        assertEquals(1, ds.get(0).epoch());
        assertEquals(2, ds.get(1).epoch());
        assertTrue(ds.get(1).updatedMillis() >= ds.get(1).createdMillis());
    }

    @Test
    void conversationsListHeadAndCurrentMembers() {
        for (String u : List.of("u-ana", "u-bo", "u-cy")) dir.createUser(u, "");
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));
        dir.createConversation("c-g", "group", List.of("u-ana", "u-bo", "u-cy"));
        dir.removeMember("c-g", "u-cy");
        Page<ConversationSummary> p = listing.listConversations(null, 10);
        assertNull(p.next());
        assertEquals(List.of(new ConversationSummary("c-ab", "direct", 2, 2), new ConversationSummary("c-g", "group", 2, 2)),
                p.items());
        assertEquals("c-ab", listing.listConversations(null, 1).next());
    }

    @Test
    void cursorsCompareEachDeviceWithWhatItsUserCanSee() throws Exception {
        for (String u : List.of("u-ana", "u-bo", "u-cy", "u-dee")) dir.createUser(u, "");
        dir.registerDevice("u-ana", "d-ana");
        dir.registerDevice("u-ana", "d-ana2");
        dir.registerDevice("u-bo", "d-bo");
        dir.registerDevice("u-cy", "d-cy");
        dir.registerDevice("u-dee", "d-dee");   // never a member: not listed
        dir.createConversation("c-g", "group", List.of("u-ana", "u-bo", "u-cy"));   // seq 1: one join of the three
        dir.removeMember("c-g", "u-cy");                                             // seq 2
        dir.addMember("c-g", "u-cy");                                                // seq 3
        dir.removeMember("c-g", "u-cy");                                             // seq 4
        dir.removeMember("c-g", "u-bo");                                             // seq 5
        dir.addMember("c-g", "u-dee");                                               // seq 6
        dir.removeMember("c-g", "u-dee");                                            // seq 7, head 7
        cursor("d-ana", "c-g", 1, 7);
        cursor("d-ana2", "c-g", 1, 2);
        cursor("d-bo", "c-g", 1, 7);    // acked up to the head after its leave: lag 0, never negative
        cursor("d-cy", "c-g", 1, 1);
        dir.reinstallDevice("d-ana2");  // its cursor is cleared with the old install
        cursor("d-ana2", "c-g", 1, 3);  // a late write of the old install: ignored

        ConversationCursors cc = listing.cursors("c-g");
        assertEquals(7, cc.head());
        List<DeviceCursor> ds = cc.devices();
        assertEquals(List.of("d-ana", "d-ana2", "d-bo", "d-cy", "d-dee"), ds.stream().map(DeviceCursor::device).toList());
        DeviceCursor ana = ds.get(0), ana2 = ds.get(1), bo = ds.get(2), cy = ds.get(3), dee = ds.get(4);
        assertTrue(ana.member());
        assertEquals(7, ana.visibleHead());
        assertEquals(0, ana.lag());
        assertNotNull(ana.updatedMillis());
        assertEquals(0, ana2.delivered(), "a cursor of an earlier install does not count");
        assertEquals(7, ana2.lag());
        assertFalse(bo.member());
        assertEquals(5, bo.visibleHead());
        assertEquals(0, bo.lag());
        assertFalse(cy.member());
        assertEquals(4, cy.visibleHead(), "the last of several periods");
        assertEquals(3, cy.lag());
        assertEquals(7, dee.visibleHead());
        assertNull(dee.updatedMillis());
        assertEquals(7, dee.lag());
    }
}
