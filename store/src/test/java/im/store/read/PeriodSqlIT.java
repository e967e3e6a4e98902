package im.store.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.infra.identity.DevicePrincipal;
import im.protocol.CaughtUpRange;
import im.protocol.ErrorCode;
import im.store.directory.DeviceCursor;
import im.store.directory.DirectoryListing;
import im.store.cursor.CursorService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.Period;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.List;
import java.util.stream.LongStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The visibility period has one rule ({@link Period}: a member sees join..leave of each of their
 * periods) and SQL copies of it over the {@code memberships} rows: the reader's page, access,
 * conversation-list ({@code sub}) and behind ({@code catchup}) queries, the delivery-state
 * membership check, and the cursor service's cap of an ack at the last seq the user may see. For a
 * few membership histories, each user's {@code sync} and catch-up must return exactly the seqs some
 * period of theirs {@link Period#covers covers}, {@code sync} with the head the largest
 * {@link Period#visibleHead}, and an ack of the conversation's head must be capped at that same seq.
 * For devices whose cursors stand at several places below and at that head, {@code sub} must list
 * the conversation while a period is open or the device is behind it, with that head, and catch-up
 * must cover exactly the visible seqs above the cursor. The operator's listings
 * ({@link DirectoryListing#cursors}, {@link DirectoryListing#mostLagging}) must give every device
 * that visible head and membership, and list as lagging exactly the devices below it.
 */
@ExtendWith(ImStackExtension.class)
class PeriodSqlIT {
    private static final long HEAD = 10;
    private static final long O = Period.OPEN;

    /** A user's membership history in the conversation: its periods, oldest first. */
    private record History(String name, List<Period> periods) {}

    private static final List<History> HISTORIES = List.of(
            new History("a member since the first event", List.of(new Period(1, O))),
            new History("a member since the head", List.of(new Period(HEAD, O))),
            new History("joined and left", List.of(new Period(3, 6))),
            new History("left, then rejoined", List.of(new Period(2, 4), new Period(7, O))),
            new History("left twice", List.of(new Period(2, 3), new Period(5, 8))));

    private static void addDevice(DataSource db, DevicePrincipal dev, String tokenHash, long delivered) throws Exception {
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO devices (device_id, user_id, token_hash) VALUES ('" + dev.deviceId() + "', '"
                    + dev.userId() + "', '" + tokenHash + "')");
            st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('"
                    + dev.deviceId() + "', 'c-p', " + dev.installEpoch() + ", " + delivered + ")");
        }
    }

    @Test
    void theReaderAndTheAckCapAgreeWithThePeriodRule(TestStack stack) throws Exception {
        DataSource db = stack.dataSource();
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            // HEAD messages by an author who is not one of the histories' users.
            st.execute("INSERT INTO users (user_id) VALUES ('u-p-author');"
                    + " INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('c-p', 'group', " + HEAD + ");"
                    + " INSERT INTO events (conv_id, seq, kind, mid, sender, cmid, body)"
                    + " SELECT 'c-p', s, 'msg', gen_random_uuid(), 'u-p-author', 'm' || s, 'x' FROM generate_series(1, " + HEAD + ") s");
        }
        ConversationReader reader = new ConversationReader(db);
        List<DeviceCursor> expected = new ArrayList<>();   // every device of the histories' users, as Period says
        CursorService cursors = new CursorService(db);
        for (int i = 0; i < HISTORIES.size(); i++) {
            History h = HISTORIES.get(i);
            DevicePrincipal who = new DevicePrincipal("u-p" + i, "d-p" + i, 1);
            try (Connection c = db.getConnection()) {
                try (Statement st = c.createStatement()) {
                    st.execute("INSERT INTO users (user_id) VALUES ('" + who.userId() + "')");
                    st.execute("INSERT INTO devices (device_id, user_id, token_hash) VALUES ('" + who.deviceId() + "', '"
                            + who.userId() + "', '\\x0" + i + "')");
                }
                try (PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO memberships (conv_id, user_id, from_seq, to_seq) VALUES ('c-p', ?, ?, ?)")) {
                    for (Period p : h.periods()) {
                        ps.setString(1, who.userId());
                        ps.setLong(2, p.from());
                        ps.setObject(3, p.open() ? null : p.until());
                        ps.executeUpdate();
                    }
                }
            }
            List<Long> seen = LongStream.rangeClosed(1, HEAD).filter(s -> h.periods().stream().anyMatch(p -> p.covers(s))).boxed().toList();
            long visibleHead = h.periods().stream().mapToLong(p -> p.visibleHead(HEAD)).max().orElseThrow();

            Period latest = h.periods().get(h.periods().size() - 1);
            long[] positions = LongStream.of(0, 1, visibleHead - 1, visibleHead).filter(d -> d >= 0).distinct().toArray();
            for (int k = 0; k < positions.length; k++) {
                long delivered = positions[k];
                DevicePrincipal dev = delivered == 0 ? who : new DevicePrincipal(who.userId(), who.deviceId() + "-" + k, 1);
                if (delivered > 0) addDevice(db, dev, "\\x1" + i + "0" + k, delivered);
                // d-p<i> acks the head below, so the listings see it at the visible head
                expected.add(cursorOf(dev, latest.open(), visibleHead, delivered == 0 ? visibleHead : delivered));
                String at = h.name() + ", cursor " + delivered;
                List<ConvCursor> listed = latest.open() || delivered < visibleHead
                        ? List.of(new ConvCursor("c-p", visibleHead, delivered, latest.from(), latest.open()))
                        : List.of();
                assertEquals(listed, reader.conversations(dev, "", 100).convs(), at + ": the conversations sub lists");
                CatchUpPage catchUp = reader.catchUp(dev, null, 100, Long.MAX_VALUE);
                assertEquals(seen.stream().filter(s -> s > delivered).toList(), catchUp.events().stream().map(e -> e.seq()).toList(),
                        at + ": the events catch-up returns");
                assertEquals(delivered < visibleHead ? List.of(new CaughtUpRange("c-p", delivered, visibleHead)) : List.of(),
                        catchUp.convs(), at + ": the range catch-up covers");
            }
            if (latest.open()) {
                assertEquals(HEAD, reader.delivery(who, "c-p").head(), h.name() + ": a current member reads the delivery state");
            } else {
                assertEquals(ErrorCode.NOT_MEMBER, assertThrows(ReadRejectedException.class, () -> reader.delivery(who, "c-p")).errorCode(),
                        h.name() + ": a former member may not read the delivery state");
            }

            SyncPage page = reader.sync(who, "c-p", 0, 100);
            assertEquals(seen, page.events().stream().map(e -> e.seq()).toList(), h.name() + ": the events sync returns");
            assertEquals(visibleHead, page.head(), h.name() + ": the head sync reports");
            assertEquals(seen, reader.catchUp(who, null, 100, Long.MAX_VALUE).events().stream().map(e -> e.seq()).toList(),
                    h.name() + ": the events catch-up returns");
            assertEquals(visibleHead, cursors.ack(who, "c-p", HEAD), h.name() + ": an ack of the head, capped");
        }
        DirectoryListing listing = new DirectoryListing(db);
        expected.sort(Comparator.comparing(DeviceCursor::user).thenComparing(DeviceCursor::device));
        assertEquals(expected, listing.cursors("c-p").devices().stream().map(PeriodSqlIT::withoutTime).toList(),
                "the operator's cursors of the conversation");
        List<DeviceCursor> lagging = listing.mostLagging(100).stream().map(l -> withoutTime(l.cursor())).toList();
        assertEquals(expected.stream().filter(d -> d.lag() > 0).collect(Collectors.toSet()), Set.copyOf(lagging),
                "the operator's most lagging devices");
        assertEquals(Set.copyOf(lagging).size(), lagging.size(), "each lagging device once");
    }

    private static DeviceCursor cursorOf(DevicePrincipal dev, boolean member, long visibleHead, long delivered) {
        return new DeviceCursor(dev.userId(), dev.deviceId(), member, visibleHead, delivered, null);
    }

    private static DeviceCursor withoutTime(DeviceCursor d) {
        return new DeviceCursor(d.user(), d.device(), d.member(), d.visibleHead(), d.delivered(), null);
    }
}
