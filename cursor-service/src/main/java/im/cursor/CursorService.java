package im.cursor;

import im.infra.db.DatabaseUnavailableException;
import im.infra.identity.DevicePrincipal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Merges device acks into {@code device_cursors}. An ack of seq n means "this device durably
 * stored every visible event up to n" (D3); the stored cursor only grows (GREATEST) and never
 * exceeds the conversation head (D4). The reply carries the merged value, so a device that
 * restored old state learns the server's larger cursor.
 */
public final class CursorService {
    /** Install epoch, head and whether the user ever had a visibility period. Params: device, conv, conv, device. */
    static final String CHECK =
            "SELECT (SELECT install_epoch FROM devices WHERE device_id = ?),"
            + " (SELECT head_seq FROM conversations WHERE conv_id = ?),"
            + " EXISTS (SELECT 1 FROM memberships m JOIN devices d ON d.user_id = m.user_id"
            + "         WHERE m.conv_id = ? AND d.device_id = ?)";

    /**
     * The merge. A cursor written by an older install of the device is replaced, not merged:
     * the new install holds nothing of what the old one stored.
     */
    static final String UPSERT =
            "INSERT INTO device_cursors AS dc (device_id, conv_id, install_epoch, delivered_seq) VALUES (?, ?, ?, ?)"
            + " ON CONFLICT (device_id, conv_id) DO UPDATE SET"
            + "  delivered_seq = CASE WHEN dc.install_epoch < EXCLUDED.install_epoch THEN EXCLUDED.delivered_seq"
            + "                       ELSE GREATEST(dc.delivered_seq, EXCLUDED.delivered_seq) END,"
            + "  install_epoch = GREATEST(dc.install_epoch, EXCLUDED.install_epoch),"
            + "  updated_at = clock_timestamp()"
            + " RETURNING delivered_seq";

    private final DataSource db;

    public CursorService(DataSource db) {
        this.db = db;
    }

    /** Validates and merges one ack; returns the merged cursor. */
    public long ack(DevicePrincipal who, String conv, long seq) {
        try (Connection c = db.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(CHECK)) {
                ps.setString(1, who.deviceId());
                ps.setString(2, conv);
                ps.setString(3, conv);
                ps.setString(4, who.deviceId());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    int epoch = rs.getInt(1);
                    if (rs.wasNull() || epoch != who.installEpoch()) {
                        throw new AckRejectedException(AckRejectedException.Reason.STALE_INSTALL,
                                "device " + who.deviceId() + " was reinstalled; this install may not ack");
                    }
                    long head = rs.getLong(2);
                    if (rs.wasNull()) {
                        throw new AckRejectedException(AckRejectedException.Reason.UNKNOWN_CONV, "no conversation " + conv);
                    }
                    if (!rs.getBoolean(3)) {
                        throw new AckRejectedException(AckRejectedException.Reason.NOT_MEMBER, "not a member of " + conv);
                    }
                    if (seq < 0 || seq > head) {
                        throw new AckRejectedException(AckRejectedException.Reason.CURSOR_AHEAD,
                                "seq=" + seq + " head=" + head);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
                ps.setString(1, who.deviceId());
                ps.setString(2, conv);
                ps.setInt(3, who.installEpoch());
                ps.setLong(4, seq);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        } catch (SQLException e) {
            throw DatabaseUnavailableException.classify("ack", e);
        }
    }
}
