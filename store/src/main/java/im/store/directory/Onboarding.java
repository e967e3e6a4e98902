package im.store.directory;

import im.infra.db.Rows;
import im.infra.db.Transactions;
import im.store.send.ConversationLog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Users, devices and memberships many at a time, as a company's directory is imported: each call
 * is one transaction of a few set-based statements (arrays bound once), whatever the number of
 * items, and all or nothing: an unknown user, an id listed twice or a full group refuses the whole
 * call and writes nothing. Existing users and devices, and current members, are reported, not
 * refused, so an import can be run again. Every new member still gets a join event of its own
 * (seqs allocated in one step), so the log alone tells who could see what, as for one member.
 */
public final class Onboarding {
    /** How many unknown ids an error names before it says "... (N in all)". */
    private static final int NAMED = 10;
    /**
     * The most users one bulk join event carries. 5,000 ids of at most 64 characters are at most
     * about 340 KB in the event's record on the event topic, well under Kafka's default 1 MB
     * ({@code max.request.size}, {@code message.max.bytes}) with the rest of the record; a bigger
     * bulk is split into the fewest events under it (docs/topics.md).
     */
    public static final int MAX_USERS_PER_EVENT = 5_000;

    private final DataSource db;
    private final Clock clock;
    private final Duration tokenTtl;
    private final int maxGroupMembers;

    Onboarding(DataSource db, Clock clock, Duration tokenTtl, int maxGroupMembers) {
        this.db = db;
        this.clock = clock;
        this.tokenTtl = tokenTtl;
        this.maxGroupMembers = maxGroupMembers;
    }

    /** A user to create: its id and display name (null: empty). */
    public record NewUser(String user, String name) {}

    /** What {@link #createUsers} did: the ids it created, and those that existed already (untouched). */
    public record CreatedUsers(List<String> created, List<String> existing) {}

    /** A device to register for a user (install epoch 1). */
    public record NewDevice(String user, String device) {}

    /** What {@link #registerDevices} did: each new device with its token (shown once), and the devices that existed already. */
    public record RegisteredDevices(List<DeviceRegistration> registered, List<String> existing) {}

    /** What {@link #addMembers} did: the new members with the seq of their join, the current ones with the seq they joined at, the head after. */
    public record AddedMembers(String conv, Map<String, Long> added, Map<String, Long> already, long head) {}

    public CreatedUsers createUsers(List<NewUser> users) {
        List<String> ids = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (NewUser u : users) {
            Directory.checkId("users[].user", u.user());
            ids.add(u.user());
            names.add(u.name() == null ? "" : u.name());
        }
        requireDistinct("users[].user", ids);
        return Transactions.run(db, "create users", c -> {
            Set<String> created = new HashSet<>(Rows.list(c,
                    "INSERT INTO users (user_id, display_name) SELECT * FROM unnest(?::text[], ?::text[])"
                    + " ON CONFLICT DO NOTHING RETURNING user_id",
                    ps -> {
                        ps.setArray(1, c.createArrayOf("text", ids.toArray()));
                        ps.setArray(2, c.createArrayOf("text", names.toArray()));
                    }, rs -> rs.getString(1)));
            List<String> made = new ArrayList<>();
            List<String> existing = new ArrayList<>();
            for (String id : ids) (created.contains(id) ? made : existing).add(id);
            return new CreatedUsers(made, existing);
        });
    }

    public RegisteredDevices registerDevices(List<NewDevice> devices) {
        List<String> users = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (NewDevice d : devices) {
            Directory.checkId("devices[].user", d.user());
            Directory.checkId("devices[].device", d.device());
            users.add(d.user());
            ids.add(d.device());
        }
        requireDistinct("devices[].device", ids);
        List<String> tokens = new ArrayList<>(ids.size());
        List<byte[]> hashes = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String t = Tokens.newToken();
            tokens.add(t);
            hashes.add(Tokens.hash(t));
        }
        Instant expires = tokenTtl.isZero() ? null : clock.instant().plus(tokenTtl);
        return Transactions.run(db, "register devices", c -> {
            requireUsers(c, users);
            Set<String> inserted = new HashSet<>(Rows.list(c,
                    "INSERT INTO devices (device_id, user_id, install_epoch, token_hash, token_expires_at)"
                    + " SELECT d, u, 1, h, ? FROM unnest(?::text[], ?::text[], ?::bytea[]) AS t(d, u, h)"
                    + " ON CONFLICT DO NOTHING RETURNING device_id",
                    ps -> {
                        ps.setTimestamp(1, expires == null ? null : Timestamp.from(expires));
                        ps.setArray(2, c.createArrayOf("text", ids.toArray()));
                        ps.setArray(3, c.createArrayOf("text", users.toArray()));
                        ps.setArray(4, c.createArrayOf("bytea", hashes.toArray(new byte[0][])));
                    }, rs -> rs.getString(1)));
            List<DeviceRegistration> registered = new ArrayList<>();
            List<String> existing = new ArrayList<>();
            for (int i = 0; i < ids.size(); i++) {
                if (inserted.contains(ids.get(i))) {
                    registered.add(new DeviceRegistration(users.get(i), ids.get(i), 1, tokens.get(i), expires));
                } else {
                    existing.add(ids.get(i));
                }
            }
            return new RegisteredDevices(registered, existing);
        });
    }

    /** Adds every listed user who is not a current member, in the order given: one (bulk) join event for them all. */
    public AddedMembers addMembers(String conv, List<String> users) {
        Directory.checkId("conv", conv);
        for (String u : users) Directory.checkId("users[]", u);
        requireDistinct("users[]", users);
        return Transactions.run(db, "add members", c -> {
            int members = lockConversation(c, conv);
            requireUsers(c, users);
            Map<String, Long> already = new HashMap<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT user_id, from_seq FROM memberships WHERE conv_id = ? AND to_seq IS NULL AND user_id = ANY (?::text[])")) {
                ps.setString(1, conv);
                ps.setArray(2, c.createArrayOf("text", users.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) already.put(rs.getString(1), rs.getLong(2));
                }
            }
            List<String> joining = new ArrayList<>();
            for (String u : users) if (!already.containsKey(u)) joining.add(u);
            if ((long) members + joining.size() > maxGroupMembers) {
                throw groupFull(conv, members, joining.size());
            }
            Map<String, Long> added = new java.util.LinkedHashMap<>();
            long head = join(c, conv, joining, added);
            return new AddedMembers(conv, added, already, head);
        });
    }

    /**
     * Appends the join events of {@code users} (in their order) under the conversation's row lock,
     * which the caller holds or this takes, and opens their membership periods. One user: one join
     * event of the single shape ({@code sender} = the user), as always. Several: ONE bulk join event
     * for all of them ({@code users} = the list, {@code sender} = its first), or, above
     * {@link #MAX_USERS_PER_EVENT}, the fewest such events (sizes differing by at most one), each on
     * its own seq. Every user's period starts at the seq of the event that added it. Puts each user's
     * seq in {@code seqs}; returns the conversation's head after.
     */
    long join(Connection c, String conv, List<String> users, Map<String, Long> seqs) throws SQLException {
        if (users.isEmpty()) return ConversationLog.head(c, conv).orElseThrow(() -> noConversation(conv));
        int events = eventsFor(users.size());
        long head = ConversationLog.allocate(c, conv, events).orElseThrow(() -> noConversation(conv));
        long first = head - events + 1;
        Long[] userSeqs = new Long[users.size()];
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO events (conv_id, seq, kind, mid, sender, body, users, users_count, msg_no)"
                + " SELECT r.conv, r.seq, 'join', r.mid, r.sender, '', r.users, r.n, " + ConversationLog.msgNo("r.conv", "r.seq", "r.seq", false)
                + " FROM (SELECT ?::text, ?::bigint, ?::uuid, ?::text, ?::text[], ?::int) AS r(conv, seq, mid, sender, users, n)")) {
            int from = 0;
            for (int e = 0; e < events; e++) {
                int size = users.size() / events + (e < users.size() % events ? 1 : 0);
                List<String> chunk = users.subList(from, from + size);
                long seq = first + e;
                ps.setString(1, conv);
                ps.setLong(2, seq);
                ps.setString(3, ConversationLog.newEventId(clock));
                ps.setString(4, chunk.get(0));
                if (size == 1) {   // the single shape, as a join of one member has always been
                    ps.setNull(5, Types.ARRAY);
                    ps.setNull(6, Types.INTEGER);
                } else {
                    ps.setArray(5, c.createArrayOf("text", chunk.toArray()));
                    ps.setInt(6, size);
                }
                ps.addBatch();
                for (int i = from; i < from + size; i++) userSeqs[i] = seq;
                from += size;
            }
            ps.executeBatch();
        }
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO memberships (conv_id, user_id, from_seq) SELECT ?, t.u, t.s FROM unnest(?::text[], ?::bigint[]) AS t(u, s)")) {
            ps.setString(1, conv);
            ps.setArray(2, c.createArrayOf("text", users.toArray()));
            ps.setArray(3, c.createArrayOf("bigint", userSeqs));
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("UPDATE conversations SET members = members + ? WHERE conv_id = ?")) {
            ps.setInt(1, users.size());
            ps.setString(2, conv);
            ps.executeUpdate();
        }
        for (int i = 0; i < users.size(); i++) seqs.put(users.get(i), userSeqs[i]);
        return head;
    }

    /** How many join events {@link #join} writes for {@code users} new members: the fewest under {@link #MAX_USERS_PER_EVENT}. */
    static int eventsFor(int users) {
        return (users + MAX_USERS_PER_EVENT - 1) / MAX_USERS_PER_EVENT;
    }

    /** Refuses the call when one of {@code users} does not exist, naming the first few. */
    static void requireUsers(Connection c, List<String> users) throws SQLException {
        List<String> missing = Rows.list(c,
                "SELECT t.u FROM unnest(?::text[]) WITH ORDINALITY AS t(u, o)"
                + " WHERE NOT EXISTS (SELECT 1 FROM users WHERE user_id = t.u) ORDER BY t.o",
                ps -> ps.setArray(1, c.createArrayOf("text", new LinkedHashSet<>(users).toArray())), rs -> rs.getString(1));
        if (!missing.isEmpty()) {
            throw new DirectoryException(DirectoryException.Code.NOT_FOUND,
                    (missing.size() == 1 ? "no user " : "no users ") + named(missing));
        }
    }

    /** Locks the conversation's row (membership changes serialise on it) and returns its current member count. */
    static int lockConversation(Connection c, String conv) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT members FROM conversations WHERE conv_id = ? FOR UPDATE")) {
            ps.setString(1, conv);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) throw noConversation(conv);
                return rs.getInt(1);
            }
        }
    }

    static void requireDistinct(String field, List<String> ids) {
        Set<String> seen = new HashSet<>();
        List<String> twice = new ArrayList<>();
        for (String id : ids) if (!seen.add(id)) twice.add(id);
        if (!twice.isEmpty()) throw Directory.invalid(field + ": listed twice: " + named(twice));
    }

    DirectoryException groupFull(String conv, int members, int joining) {
        return new DirectoryException(DirectoryException.Code.GROUP_FULL,
                conv + ": a group has at most " + maxGroupMembers + " members (IM_MAX_GROUP_MEMBERS); it has " + members
                + (joining > 0 ? ", and " + joining + " would join" : ""));
    }

    private static DirectoryException noConversation(String conv) {
        return new DirectoryException(DirectoryException.Code.NOT_FOUND, "no conversation " + conv);
    }

    private static String named(List<String> ids) {
        String first = String.join(", ", ids.subList(0, Math.min(NAMED, ids.size())));
        return ids.size() <= NAMED ? first : first + ", ... (" + ids.size() + " in all)";
    }
}
