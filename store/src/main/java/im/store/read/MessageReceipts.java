package im.store.read;

import im.infra.db.Transactions;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.Receipt;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * Receipts of a sender's messages (docs/protocol.md, "Receipts"), derived from the cursors, with no
 * row per message: for a message at seq s, the members other than the sender whose membership
 * period covers s, how many of them have a read cursor at or above s, their devices (current
 * installs), and how many of those have a delivered cursor at or above s.
 *
 * <p>Cost: one statement reads the conversation's members whose periods overlap the asked seqs,
 * with their read cursors, and one their devices with their delivered cursors; each count is then
 * of {@link Intervals} containing the seq, O(log) per seq. So a request costs O(members + their
 * devices) of the conversation, whatever the number of seqs asked (at most
 * {@link im.protocol.Limits#RECEIPTS_MAX_SEQS}) and the history's length.
 */
public final class MessageReceipts {
    // The statements are public so that the benchmark runs exactly them through pgbench as the floor.

    /** The asked seqs that are messages of the user. Parameters: conv, seqs, user. */
    public static final String OWN =
            "SELECT e.seq FROM events e WHERE e.conv_id = ? AND e.seq = ANY (?::bigint[]) AND e.kind = 'msg' AND e.sender = ?";

    /**
     * The periods of the members other than the user that overlap [low, high], each with the
     * member's read cursor. Parameters: conv, user, high, low.
     */
    public static final String MEMBERS =
            "SELECT m.user_id, m.from_seq, m.to_seq, COALESCE(r.read_seq, 0) FROM memberships m"
            + " LEFT JOIN read_cursors r ON r.user_id = m.user_id AND r.conv_id = m.conv_id"
            + " WHERE m.conv_id = ? AND m.user_id <> ? AND m.from_seq <= ? AND (m.to_seq IS NULL OR m.to_seq >= ?)";

    /**
     * The current installs of those members, each with its delivered cursor (0 when none, or one of
     * an older install). Parameters: as {@link #MEMBERS}.
     */
    public static final String DEVICES =
            "SELECT DISTINCT d.device_id, d.user_id, COALESCE(c.delivered_seq, 0) FROM memberships m"
            + " JOIN devices d ON d.user_id = m.user_id"
            + " LEFT JOIN device_cursors c ON c.device_id = d.device_id AND c.conv_id = m.conv_id AND c.install_epoch = d.install_epoch"
            + " WHERE m.conv_id = ? AND m.user_id <> ? AND m.from_seq <= ? AND (m.to_seq IS NULL OR m.to_seq >= ?)";

    private final DataSource db;

    public MessageReceipts(DataSource db) {
        this.db = db;
    }

    /**
     * The receipts of {@code who}'s messages at {@code seqs} of {@code conv}, in the order asked.
     *
     * @throws ReadRejectedException {@code NOT_SENDER} when a seq is not a message of the user (or
     *         holds no event; a conversation that does not exist holds none)
     */
    public List<Receipt> receipts(DevicePrincipal who, String conv, List<Long> seqs) {
        if (seqs.isEmpty()) return List.of();
        return Transactions.run(db, "receipts", c -> {
            TreeSet<Long> own = new TreeSet<>();
            try (PreparedStatement ps = c.prepareStatement(OWN)) {
                ps.setString(1, conv);
                ps.setArray(2, c.createArrayOf("int8", seqs.toArray()));
                ps.setString(3, who.userId());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) own.add(rs.getLong(1));
                }
            }
            for (long s : seqs) {
                if (!own.contains(s)) {
                    throw new ReadRejectedException(ErrorCode.NOT_SENDER, "receipts: seq " + s + " of " + conv + " is not a message of yours");
                }
            }
            long low = own.first();
            long high = own.last();
            // Every count is of intervals that contain the seq: a member's period [from, to], the part of it
            // below the member's read cursor [from, min(to, read)], and per device [from, min(to, delivered)].
            Intervals members = new Intervals();
            Intervals read = new Intervals();
            Map<String, List<long[]>> periods = new HashMap<>();   // user → its periods {from, to}
            try (PreparedStatement ps = overlapping(c, MEMBERS, conv, who, low, high); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long from = rs.getLong(2);
                    long to = rs.getLong(3);
                    if (rs.wasNull()) to = Long.MAX_VALUE;
                    periods.computeIfAbsent(rs.getString(1), u -> new ArrayList<>()).add(new long[] {from, to});
                    members.add(from, to);
                    read.add(from, Math.min(to, rs.getLong(4)));
                }
            }
            Intervals devices = new Intervals();
            Intervals delivered = new Intervals();
            try (PreparedStatement ps = overlapping(c, DEVICES, conv, who, low, high); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    for (long[] p : periods.getOrDefault(rs.getString(2), List.of())) {
                        devices.add(p[0], p[1]);
                        delivered.add(p[0], Math.min(p[1], rs.getLong(3)));
                    }
                }
            }
            List<Receipt> out = new ArrayList<>(seqs.size());
            for (long s : seqs) {
                out.add(new Receipt(s, members.containing(s), read.containing(s), devices.containing(s), delivered.containing(s)));
            }
            return out;
        });
    }

    /**
     * Closed intervals of seqs, counted by how many contain a seq: those that start at or below it less
     * those that end below it (an empty interval, end below start, is never added). O(log n) a count.
     */
    static final class Intervals {
        private long[] starts = new long[16];
        private long[] ends = new long[16];
        private int n;
        private boolean sorted = true;

        void add(long start, long end) {
            if (end < start) return;
            if (n == starts.length) {
                starts = java.util.Arrays.copyOf(starts, 2 * n);
                ends = java.util.Arrays.copyOf(ends, 2 * n);
            }
            starts[n] = start;
            ends[n++] = end;
            sorted = false;
        }

        long containing(long seq) {
            if (!sorted) {
                java.util.Arrays.sort(starts, 0, n);
                java.util.Arrays.sort(ends, 0, n);
                sorted = true;
            }
            return atMost(starts, seq) - atMost(ends, seq - 1);
        }

        /** How many of the first n values of sorted {@code a} are at most {@code v}. */
        private long atMost(long[] a, long v) {
            int lo = 0;
            int hi = n;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (a[mid] <= v) lo = mid + 1;
                else hi = mid;
            }
            return lo;
        }
    }

    private static PreparedStatement overlapping(Connection c, String sql, String conv, DevicePrincipal who, long low, long high)
            throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        ps.setString(1, conv);
        ps.setString(2, who.userId());
        ps.setLong(3, high);
        ps.setLong(4, low);
        return ps;
    }
}
