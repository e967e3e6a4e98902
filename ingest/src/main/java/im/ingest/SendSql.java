package im.ingest;

/**
 * The SQL of one send, in the order it runs inside one transaction. Public so the benchmark can
 * run exactly these statements through pgbench as the floor.
 */
public final class SendSql {
    /**
     * One round trip for every check that can refuse a send before any lock is taken: the device's
     * current install epoch, an earlier event with this (sender, cmid), whether the conversation
     * exists and whether the sender is a member now. Parameters: conv, conv, cmid, device.
     */
    public static final String PRECHECK =
            "SELECT d.install_epoch, d.user_id,"
            + " EXISTS (SELECT 1 FROM conversations c WHERE c.conv_id = ?) AS conv_exists,"
            + " EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = ? AND m.user_id = d.user_id"
            + "         AND m.to_seq IS NULL) AS is_member,"
            + " e.conv_id, e.seq, e.mid, e.body, e.created_at"
            + " FROM devices d LEFT JOIN events e ON e.sender = d.user_id AND e.cmid = ?"
            + " WHERE d.device_id = ?";

    /** Allocates the next seq; the row lock it takes serialises the conversation's writers. */
    public static final String NEXT_SEQ =
            "UPDATE conversations SET head_seq = head_seq + 1 WHERE conv_id = ? RETURNING head_seq";

    /** Gives back the seq just allocated, while its lock is still held (a send refused after allocation). */
    public static final String UNDO_SEQ =
            "UPDATE conversations SET head_seq = head_seq - 1 WHERE conv_id = ?";

    /**
     * Inserts the event only if the sender is still a member, checked after the conversation
     * lock is held (a statement-level snapshot taken after any concurrent leave committed).
     * Parameters: conv, seq, mid, sender, device, cmid, body, conv, sender.
     */
    public static final String INSERT_MSG =
            "INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body)"
            + " SELECT ?, ?, 'msg', ?::uuid, ?, ?, ?, ?"
            + " WHERE EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = ? AND m.user_id = ? AND m.to_seq IS NULL)"
            + " RETURNING created_at";

    private SendSql() {}
}
