package im.store.directory;

import im.infra.db.Rows;
import im.infra.db.Transactions;
import im.infra.identity.DevicePrincipal;
import im.store.send.ConversationLog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Users, devices and their tokens, conversations and membership. Membership changes are events
 * in the conversation log (kind {@code join}/{@code leave}) with their own seq, allocated exactly
 * like a message's, so visibility periods follow the log.
 */
public final class Directory {
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9._:-]{1,64}");
    /** The most current members of a group when none is configured: the default of {@code IM_MAX_GROUP_MEMBERS}. */
    public static final int DEFAULT_MAX_GROUP_MEMBERS = 100_000;

    /** Token lifetime when none is configured: the default of {@code IM_TOKEN_TTL_S}. */
    public static final Duration DEFAULT_TOKEN_TTL = Duration.ofDays(30);

    private final DataSource db;
    private final Clock clock;
    private final Duration tokenTtl;
    private final int maxGroupMembers;
    private final Onboarding onboarding;

    public Directory(DataSource db, Clock clock) {
        this(db, clock, DEFAULT_TOKEN_TTL);
    }

    /** @param tokenTtl lifetime of issued device tokens; {@link Duration#ZERO} = never expire */
    public Directory(DataSource db, Clock clock, Duration tokenTtl) {
        this(db, clock, tokenTtl, DEFAULT_MAX_GROUP_MEMBERS);
    }

    /** @param maxGroupMembers the most current members of a group ({@code IM_MAX_GROUP_MEMBERS}) */
    public Directory(DataSource db, Clock clock, Duration tokenTtl, int maxGroupMembers) {
        if (tokenTtl.isNegative()) throw new IllegalArgumentException("tokenTtl must not be negative");
        if (maxGroupMembers < 2) throw new IllegalArgumentException("maxGroupMembers must be at least 2, got " + maxGroupMembers);
        this.db = db;
        this.clock = clock;
        this.tokenTtl = tokenTtl;
        this.maxGroupMembers = maxGroupMembers;
        this.onboarding = new Onboarding(db, clock, tokenTtl, maxGroupMembers);
    }

    /** Users, devices and memberships many at a time, with this directory's settings. */
    public Onboarding onboarding() {
        return onboarding;
    }

    // ---------------------------------------------------------------- authentication

    /**
     * Resolves a device token; {@code BAD_TOKEN} (unknown, replaced by a renewal, or expired) or
     * {@code STALE_INSTALL} (the token of an earlier install) otherwise.
     */
    public DevicePrincipal authenticate(String token) {
        return credential(token).principal();
    }

    /** As {@link #authenticate}, with the token's expiry (what a session watches besides its principal's numbers). */
    public AuthenticatedToken credential(String token) {
        if (token == null || !token.startsWith(Tokens.PREFIX)) {
            throw new DirectoryException(DirectoryException.Code.BAD_TOKEN, "unknown token");
        }
        byte[] hash = Tokens.hash(token);
        return inTx("authenticate", c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT user_id, device_id, install_epoch, token_expires_at, credential FROM devices WHERE token_hash = ?")) {
                ps.setBytes(1, hash);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        OffsetDateTime expires = rs.getObject(4, OffsetDateTime.class);
                        if (expires != null && !clock.instant().isBefore(expires.toInstant())) {
                            throw new DirectoryException(DirectoryException.Code.BAD_TOKEN,
                                    "token expired at " + expires.toInstant() + "; renew it (POST /admin/devices/"
                                    + rs.getString(2) + "/token)");
                        }
                        return new AuthenticatedToken(new DevicePrincipal(rs.getString(1), rs.getString(2), rs.getInt(3), rs.getLong(5)),
                                expires == null ? null : expires.toInstant());
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT device_id, install_epoch FROM device_installs WHERE token_hash = ?")) {
                ps.setBytes(1, hash);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        throw new DirectoryException(DirectoryException.Code.STALE_INSTALL,
                                "device " + rs.getString(1) + " was reinstalled; install " + rs.getInt(2) + " is retired");
                    }
                }
            }
            throw new DirectoryException(DirectoryException.Code.BAD_TOKEN, "unknown token");
        });
    }

    // ---------------------------------------------------------------- users and devices

    public void createUser(String user, String displayName) {
        checkId("user", user);
        String name = displayName == null ? "" : displayName;
        if (name.length() > 200) throw invalid("name: at most 200 characters");
        inTx("create user", c -> {
            insertNew(c, "INSERT INTO users (user_id, display_name) VALUES (?, ?) ON CONFLICT DO NOTHING", "user " + user, user, name);
            return null;
        });
    }

    /** Runs an {@code INSERT ... ON CONFLICT DO NOTHING} of two text values; ALREADY_EXISTS naming {@code what} if it inserted nothing. */
    private static void insertNew(Connection c, String sql, String what, String first, String second) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, first);
            ps.setString(2, second);
            if (ps.executeUpdate() == 0) {
                throw new DirectoryException(DirectoryException.Code.ALREADY_EXISTS, what + " exists");
            }
        }
    }

    /** Registers a new device (install epoch 1) and returns its token. */
    public DeviceRegistration registerDevice(String user, String device) {
        checkId("user", user);
        checkId("device", device);
        String token = Tokens.newToken();
        Instant expires = expiry();
        return inTx("register device", c -> {
            requireUser(c, user);
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO devices (device_id, user_id, install_epoch, token_hash, token_expires_at)"
                    + " VALUES (?, ?, 1, ?, ?) ON CONFLICT DO NOTHING")) {
                ps.setString(1, device);
                ps.setString(2, user);
                ps.setBytes(3, Tokens.hash(token));
                ps.setObject(4, timestamp(expires));
                if (ps.executeUpdate() == 0) {
                    throw new DirectoryException(DirectoryException.Code.ALREADY_EXISTS,
                            "device " + device + " exists; reinstall it to get a new token");
                }
            }
            return new DeviceRegistration(user, device, 1, token, expires);
        });
    }

    /**
     * A reinstall: the install epoch grows by one, the old token stops working (it is answered
     * STALE_INSTALL) and the device's cursors are cleared, because the new install holds nothing.
     */
    public DeviceRegistration reinstallDevice(String device) {
        checkId("device", device);
        String token = Tokens.newToken();
        Instant expires = expiry();
        return inTx("reinstall device", c -> {
            String user;
            int oldEpoch;
            byte[] oldHash;
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT user_id, install_epoch, token_hash FROM devices WHERE device_id = ? FOR UPDATE")) {
                ps.setString(1, device);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no device " + device);
                    user = rs.getString(1);
                    oldEpoch = rs.getInt(2);
                    oldHash = rs.getBytes(3);
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO device_installs (device_id, install_epoch, token_hash) VALUES (?, ?, ?)")) {
                ps.setString(1, device);
                ps.setInt(2, oldEpoch);
                ps.setBytes(3, oldHash);
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE devices SET install_epoch = ?, token_hash = ?, token_expires_at = ?,"
                    + " credential = credential + 1, updated_at = clock_timestamp() WHERE device_id = ?")) {
                ps.setInt(1, oldEpoch + 1);
                ps.setBytes(2, Tokens.hash(token));
                ps.setObject(3, timestamp(expires));
                ps.setString(4, device);
                ps.executeUpdate();
            }
            // The old install's cursors go, and each removal is recorded for the CDC relay, which
            // publishes it as a deletion record of <prefix>cursors (V3__cursor_resets.sql).
            try (PreparedStatement ps = c.prepareStatement(
                    "WITH gone AS (DELETE FROM device_cursors WHERE device_id = ? RETURNING conv_id)"
                    + " INSERT INTO cursor_resets (device_id, conv_id, install_epoch) SELECT ?, conv_id, ? FROM gone")) {
                ps.setString(1, device);
                ps.setString(2, device);
                ps.setInt(3, oldEpoch + 1);
                ps.executeUpdate();
            }
            return new DeviceRegistration(user, device, oldEpoch + 1, token, expires);
        });
    }

    /**
     * Issues a fresh token for the device's current install (same epoch, cursors kept), with a new
     * expiry. The previous token stops working at once and is answered {@code BAD_TOKEN}.
     */
    public DeviceRegistration renewToken(String device) {
        checkId("device", device);
        String token = Tokens.newToken();
        Instant expires = expiry();
        return inTx("renew token", c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE devices SET token_hash = ?, token_expires_at = ?, credential = credential + 1,"
                    + " updated_at = clock_timestamp() WHERE device_id = ? RETURNING user_id, install_epoch")) {
                ps.setBytes(1, Tokens.hash(token));
                ps.setObject(2, timestamp(expires));
                ps.setString(3, device);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no device " + device);
                    return new DeviceRegistration(rs.getString(1), device, rs.getInt(2), token, expires);
                }
            }
        });
    }

    /**
     * Revokes the device's token: it is replaced by one nobody holds, so the device cannot
     * authenticate until an operator renews its token (cursors kept), and its open sessions end.
     */
    public void revokeToken(String device) {
        checkId("device", device);
        byte[] unheld = Tokens.hash(Tokens.newToken());
        inTx("revoke token", c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE devices SET token_hash = ?, credential = credential + 1, updated_at = clock_timestamp()"
                    + " WHERE device_id = ?")) {
                ps.setBytes(1, unheld);
                ps.setString(2, device);
                if (ps.executeUpdate() == 0) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no device " + device);
            }
            return null;
        });
    }

    /** When a token issued now expires; null when tokens never expire. */
    private Instant expiry() {
        return tokenTtl.isZero() ? null : clock.instant().plus(tokenTtl);
    }

    private static OffsetDateTime timestamp(Instant instant) {
        return instant == null ? null : instant.atOffset(ZoneOffset.UTC);
    }

    // ---------------------------------------------------------------- conversations

    /**
     * Creates a conversation, so that the log alone tells who could see what. A group's initial
     * members join by one bulk join event at seq 1 (more than {@link Onboarding#MAX_USERS_PER_EVENT}:
     * the fewest such events). A direct conversation has exactly two members, fixed at its create;
     * they join by a single join each (seq 1, 2), the shape every direct conversation's log has had.
     */
    public ConversationInfo createConversation(String conv, String kind, List<String> members) {
        checkId("conv", conv);
        if (!"direct".equals(kind) && !"group".equals(kind)) throw invalid("kind: must be 'direct' or 'group'");
        if (members == null || members.isEmpty()) throw invalid("members: at least one member");
        LinkedHashSet<String> unique = new LinkedHashSet<>(members);
        if (unique.size() != members.size()) throw invalid("members: listed twice");
        if ("direct".equals(kind) && unique.size() != 2) throw invalid("members: a direct conversation has exactly two");
        if (unique.size() > maxGroupMembers) throw onboarding.groupFull(conv, 0, unique.size());
        for (String m : unique) checkId("members[]", m);
        inTx("create conversation", c -> {
            Onboarding.requireUsers(c, members);
            insertNew(c, "INSERT INTO conversations (conv_id, kind) VALUES (?, ?) ON CONFLICT DO NOTHING", "conversation " + conv, conv, kind);
            if ("direct".equals(kind)) {
                for (String m : members) onboarding.join(c, conv, List.of(m), new HashMap<>());
            } else {
                onboarding.join(c, conv, members, new HashMap<>());
            }
            return null;
        });
        return conversation(conv);
    }

    /** Adds a member (a join event); adding a current member changes nothing. */
    public MembershipChange addMember(String conv, String user) {
        checkId("conv", conv);
        checkId("user", user);
        return inTx("add member", c -> {
            requireUser(c, user);
            int members = Onboarding.lockConversation(c, conv);
            Long current = currentFromSeq(c, conv, user);
            if (current != null) return new MembershipChange(conv, user, "join", current, false);
            if (members >= maxGroupMembers) throw onboarding.groupFull(conv, members, 1);
            Map<String, Long> seqs = new HashMap<>();
            onboarding.join(c, conv, List.of(user), seqs);   // the one place join events are written
            return new MembershipChange(conv, user, "join", seqs.get(user), true);
        });
    }

    /** Removes a member (a leave event, which the member still sees); NOT_MEMBER if not one. */
    public MembershipChange removeMember(String conv, String user) {
        checkId("conv", conv);
        checkId("user", user);
        return inTx("remove member", c -> {
            Onboarding.lockConversation(c, conv);
            if (currentFromSeq(c, conv, user) == null) {
                throw new DirectoryException(DirectoryException.Code.NOT_MEMBER, user + " is not a member of " + conv);
            }
            long seq = appendLeave(c, conv, user);
            return new MembershipChange(conv, user, "leave", seq, true);
        });
    }

    public ConversationInfo conversation(String conv) {
        checkId("conv", conv);
        return inTx("read conversation", c -> {
            String kind;
            long head;
            try (PreparedStatement ps = c.prepareStatement("SELECT kind, head_seq FROM conversations WHERE conv_id = ?")) {
                ps.setString(1, conv);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no conversation " + conv);
                    kind = rs.getString(1);
                    head = rs.getLong(2);
                }
            }
            List<Membership> ms = Rows.list(c,
                    "SELECT user_id, from_seq, to_seq FROM memberships WHERE conv_id = ? ORDER BY from_seq, user_id",
                    ps -> ps.setString(1, conv), rs -> new Membership(rs.getString(1), rs.getLong(2), rs.getObject(3, Long.class)));
            return new ConversationInfo(conv, kind, head, ms);
        });
    }

    // ---------------------------------------------------------------- internals

    /** Appends a leave event of {@code user} and closes the user's membership period at it. */
    private long appendLeave(Connection c, String conv, String user) throws SQLException {
        long seq = ConversationLog.nextSeq(c, conv).orElseThrow(
                () -> new DirectoryException(DirectoryException.Code.NOT_FOUND, "no conversation " + conv));
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO events (conv_id, seq, kind, mid, sender, body, msg_no)"
                + " SELECT r.conv, r.seq, 'leave', r.mid, r.sender, '', " + ConversationLog.msgNo("r.conv", "r.seq", "r.seq", false)
                + " FROM (SELECT ?::text, ?::bigint, ?::uuid, ?::text) AS r(conv, seq, mid, sender)")) {
            ps.setString(1, conv);
            ps.setLong(2, seq);
            ps.setString(3, ConversationLog.newEventId(clock));
            ps.setString(4, user);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("UPDATE conversations SET members = members - 1 WHERE conv_id = ?")) {
            ps.setString(1, conv);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(
                "UPDATE memberships SET to_seq = ? WHERE conv_id = ? AND user_id = ? AND to_seq IS NULL")) {
            ps.setLong(1, seq);
            ps.setString(2, conv);
            ps.setString(3, user);
            ps.executeUpdate();
        }
        return seq;
    }

    private static Long currentFromSeq(Connection c, String conv, String user) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT from_seq FROM memberships WHERE conv_id = ? AND user_id = ? AND to_seq IS NULL")) {
            ps.setString(1, conv);
            ps.setString(2, user);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }

    static void requireUser(Connection c, String user) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM users WHERE user_id = ?")) {
            ps.setString(1, user);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) throw new DirectoryException(DirectoryException.Code.NOT_FOUND, "no user " + user);
            }
        }
    }

    static void checkId(String field, String value) {
        if (value == null || !ID.matcher(value).matches()) {
            throw invalid(field + ": must match [A-Za-z0-9._:-]{1,64}");
        }
    }

    static DirectoryException invalid(String msg) {
        return new DirectoryException(DirectoryException.Code.INVALID, msg);
    }

    private <T> T inTx(String what, Transactions.Body<T> body) {
        return Transactions.run(db, what, body);
    }
}
