package im.store.send;

/**
 * The SQL of one send, in the order it runs inside one transaction: {@link #PRECHECK}, the seq
 * ({@link ConversationLog#NEXT_SEQ}, where every statement that moves a head lives), then
 * {@link #INSERT_MSG}. Public so the benchmark can run exactly these statements through pgbench as
 * the floor.
 */
public final class SendSql {
    /**
     * One round trip for every fact that can refuse a send before any lock is taken: the device's
     * current install epoch, whether the sender is a member now, an earlier event with this
     * (sender, cmid), the device's credential number (its token renewed or revoked since the
     * session authenticated) and, last, whether the conversation exists. The first eleven columns are
     * {@link #BATCH_PRECHECK}'s, so {@link SendRules} reads and decides both alike. The earlier
     * event's body is NULL when it was recalled (its body is gone; a resend is still its dup).
     * Also the pre-check of an edit or recall ({@link MessageChanges}), whose cmids share the
     * sender's key space. Parameters: conv, conv, cmid, device.
     */
    public static final String PRECHECK =
            "SELECT d.install_epoch, d.user_id,"
            + " EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = ? AND m.user_id = d.user_id"
            + "         AND m.to_seq IS NULL) AS is_member,"
            + " e.conv_id, e.seq, e.mid, CASE WHEN e.recalled_by IS NULL THEN e.body END, e.created_at, d.credential,"
            + " e.kind, e.ref_seq,"
            + " EXISTS (SELECT 1 FROM conversations c WHERE c.conv_id = ?) AS conv_exists"
            + " FROM devices d LEFT JOIN events e ON e.sender = d.user_id AND e.cmid = ?"
            + " WHERE d.device_id = ?";

    /**
     * Inserts the event only if the sender is still a member, checked after the conversation
     * lock is held (a statement-level snapshot taken after any concurrent leave committed).
     * Parameters: conv, seq, mid, sender, device, cmid, body, conv, sender.
     */
    public static final String INSERT_MSG =
            "INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body, msg_no, own_no)"
            + " SELECT r.conv, r.seq, 'msg', r.mid, r.sender, r.dev, r.cmid, r.body,"
            + " " + ConversationLog.msgNo("r.conv", "r.seq", "r.seq", true) + ","
            + " " + ConversationLog.ownNo("r.conv", "r.sender", "1")
            + " FROM (SELECT ?::text, ?::bigint, ?::uuid, ?::text, ?::text, ?::text, ?::text) AS r(conv, seq, mid, sender, dev, cmid, body)"
            + " WHERE EXISTS (SELECT 1 FROM memberships m WHERE m.conv_id = ? AND m.user_id = ? AND m.to_seq IS NULL)"
            + " RETURNING created_at";

    // ---- The group-commit batch (SendBatch): a few statements per batch whatever its size, each
    // with one row per send in arrays. Every per-row lookup is a LATERAL ... LIMIT 1 subquery or an
    // index condition, so the generic plan is nested loops over index scans; see docs/benchmarks.md.

    /**
     * Locks the batch's conversations (sorted ids, so two lockers never wait on each other in a
     * cycle) and reads their heads. It also sets {@code plan_cache_mode} for the rest of this
     * transaction only, so that the two statements below run their cached generic plan rather
     * than being planned again on every execution (PostgreSQL would otherwise keep custom plans,
     * costed for the exact array length). Parameter: conv ids (text[]).
     */
    public static final String BATCH_LOCK =
            "SELECT c.conv_id, c.head_seq"
            + " FROM (SELECT set_config('plan_cache_mode', 'force_generic_plan', true)) AS g, conversations c"
            + " WHERE c.conv_id = ANY (?::text[]) ORDER BY c.conv_id FOR UPDATE OF c";

    /**
     * PRECHECK for every send of a batch, run after BATCH_LOCK (membership can change only under
     * the conversation's lock, so what it reads holds until COMMIT). One row per send, in order,
     * with PRECHECK's first eleven columns (whether the conversation exists is what BATCH_LOCK found).
     * Parameters: device ids, conv ids, cmids (text[] of equal length).
     */
    public static final String BATCH_PRECHECK =
            "SELECT d.install_epoch, d.user_id, m.member, e.conv_id, e.seq, e.mid,"
            + " CASE WHEN e.recalled_by IS NULL THEN e.body END, e.created_at, d.credential, e.kind, e.ref_seq"
            + " FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS r(dev, conv, cmid, i)"
            + " LEFT JOIN LATERAL (SELECT d.install_epoch, d.user_id, d.credential FROM devices d"
            + "     WHERE d.device_id = r.dev LIMIT 1) d ON true"
            + " LEFT JOIN LATERAL (SELECT true AS member FROM memberships m"
            + "     WHERE m.conv_id = r.conv AND m.user_id = d.user_id AND m.to_seq IS NULL LIMIT 1) m ON true"
            + " LEFT JOIN LATERAL (SELECT e.conv_id, e.seq, e.mid, e.body, e.created_at, e.kind, e.ref_seq, e.recalled_by FROM events e"
            + "     WHERE e.sender = d.user_id AND e.cmid = r.cmid LIMIT 1) e ON true"
            + " ORDER BY r.i";

    /**
     * Moves the heads ({@link ConversationLog#MOVE_HEADS}, to what {@link ConversationLog.Heads}
     * allocated) and inserts the batch's events in one statement. A row whose sender is no longer a
     * member, or whose (sender, cmid) a concurrent transaction committed, is skipped (not an
     * error): the caller compares the rows returned with the rows given, and on a difference rolls
     * back and runs the batch again. Parameters: MOVE_HEADS's three (conv ids, new heads, conv ids);
     * conv ids, seqs, mids, senders, devices, cmids, bodies (text[], bigint[], uuid[], text[] x4).
     */
    public static final String BATCH_INSERT =
            "WITH heads AS (" + ConversationLog.MOVE_HEADS + ")"
            + " INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body, msg_no, own_no)"
            + " SELECT r.conv, r.seq, 'msg', r.mid, r.sender, r.dev, r.cmid, r.body,"
            + " " + ConversationLog.msgNo("r.conv", "r.first", "r.seq", true) + ","
            + " " + ConversationLog.ownNo("r.conv", "r.sender", "r.nth")
            // a conversation's rows of a batch have consecutive seqs from its first (else the batch rolls back)
            + " FROM (SELECT u.*, min(u.seq) OVER (PARTITION BY u.conv) AS first,"
            + "     row_number() OVER (PARTITION BY u.conv, u.sender ORDER BY u.seq) AS nth"
            + "   FROM unnest(?::text[], ?::bigint[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[])"
            + "     AS u(conv, seq, mid, sender, dev, cmid, body)) r"
            + " CROSS JOIN LATERAL (SELECT 1 FROM memberships m"
            + "     WHERE m.conv_id = r.conv AND m.user_id = r.sender AND m.to_seq IS NULL LIMIT 1) m"
            + " ON CONFLICT ON CONSTRAINT events_sender_cmid DO NOTHING"
            + " RETURNING conv_id, seq, created_at";

    private SendSql() {}
}
