package im.reliability;

import im.reliability.History.CommittedEvent;
import im.reliability.History.DeviceRecord;
import im.reliability.History.MembershipOp;
import im.reliability.History.Outcome;
import im.reliability.History.Period;
import im.reliability.History.SendRecord;
import im.reliability.History.SentReply;
import im.reliability.History.TopicRecord;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks a campaign {@link History} against the platform's promises. Pure: no I/O.
 *
 * <p>Only rules that a history can break are checked: nothing the schema already forbids (a
 * second row for one (conv, seq) or one (sender, cmid)) and nothing a map of the recorder already
 * made unique. Visibility is judged by the periods the log's own join/leave events define (the
 * log is the authority; the memberships table must agree with it). Each violation's detail names
 * the conversation, device, seq and cmid it concerns:
 * <ul>
 *   <li>{@link Kind#LOST_WRITE}: every SENT send is committed at its seq as its kind ({@code msg},
 *       {@code edit}, {@code recall}) with the same cmid, ref, body and sender (D1, D6). Edits and
 *       recalls are sends: they go through the outbox with a cmid and are judged like messages. Two
 *       exceptions: a message or edit a recall of the log emptied may have body {@code ""}, and a recall
 *       of a message already recalled is answered with the first recall (all its replies {@code dup:true},
 *       the seq holds a recall of the same message by the same sender with another cmid).</li>
 *   <li>{@link Kind#DUPLICATE_WRITE}: every {@code sent} reply of one cmid names the same seq, and
 *       at most one says {@code dup:false} (only one attempt can have inserted the row) (D2); the same
 *       for messages, edits and recalls.</li>
 *   <li>{@link Kind#PHANTOM_WRITE}: every committed message, edit and recall is a recorded send of its
 *       sender, in the same conversation with the same kind, ref and body (emptied, if recalled).</li>
 *   <li>{@link Kind#SEQ_GAP}: each conversation's committed seqs are exactly 1..head.</li>
 *   <li>{@link Kind#NOT_ON_TOPIC}: every committed (conv, seq) is on the event topic at least once.</li>
 *   <li>{@link Kind#MEMBERSHIP_MISMATCH}: join/leave events alternate per user, their periods equal
 *       the memberships table, and every change the admin API confirmed is in the log at its seq.</li>
 *   <li>Per install and conversation: every event frame it received and every event it stored is
 *       visible to its user ({@link Kind#FRAME_INVISIBLE}, {@link Kind#STORE_INVISIBLE}) and equals the
 *       committed event ({@link Kind#CONTENT_MISMATCH}); nothing was reported stored twice
 *       ({@link Kind#STORE_DUPLICATE}); no event arrived more than {@link #REVOCATION_BOUND_MILLIS}
 *       after the install was replaced ({@link Kind#STALE_INSTALL_READ}); every visible seq &le; the
 *       local cursor is stored and the server cursor is not above the local one
 *       ({@link Kind#STORE_MISSING}, D3); the cursors the server reported ({@code acked}, {@code
 *       subbed}) never decrease ({@link Kind#CURSOR_REGRESSED}) and never exceed the last seq visible
 *       to the user, nor the end cursors the head ({@link Kind#CURSOR_ABOVE_HEAD}, D4).</li>
 *   <li>Online installs in addition: with an open period, local and server cursor at the last
 *       visible seq ({@link Kind#NOT_CONVERGED}); every visible seq stored ({@link Kind#STORE_MISSING});
 *       outbox empty ({@link Kind#OUTBOX_NOT_EMPTY}).</li>
 *   <li>Read state, per install ({@link ReadChecks}): every read state it was told ({@code readack},
 *       {@code unread} push, {@code subbed} entry) has unread &ge; 0 ({@link Kind#UNREAD_NEGATIVE});
 *       its read cursor and head are not above the last seq visible to the user, nor the cursor above
 *       the state's head ({@link Kind#READ_ABOVE_HEAD}); its unread is the log's count of visible
 *       messages of others in (read, head] ({@link Kind#UNREAD_DISAGREES}); no reported cursor is above
 *       the user's final read cursor, and one install's {@code readack}s never decrease per
 *       conversation ({@link Kind#READ_REGRESSED}). Reports of different devices are not ordered by
 *       arrival time: the tap stamps arrival, not when the server took the state.</li>
 *   <li>Edits and recalls ({@link ChangeChecks}): a recalled message or edit (the message a {@code recall}
 *       event refers to, and every {@code edit} of it) may reach a device with its body as sent or
 *       none ({@link Kind#CONTENT_MISMATCH} otherwise), but its events row is empty, no {@code synced}
 *       or {@code caughtup} page answering a request the device's socket sent after the recaller
 *       received the recall's {@code sent} carries its body, and no store at the end (online or a
 *       snapshotted old install) holds its body once it holds the recall or its cursor passed it
 *       ({@link Kind#RECALLED_BODY_SERVED}); an online install's SDK local query shows it as
 *       {@code ""} ({@link Kind#RECALL_NOT_APPLIED}) and shows every other message as its latest edit
 *       visible to the user, else its body ({@link Kind#EDIT_NOT_APPLIED}).</li>
 *   <li>Read state at the end: every online install's SDK {@code unread(conv)} equals the log's count
 *       of visible messages of others above the user's final read cursor ({@code read_cursors}), so
 *       all of a user's online installs agree ({@link Kind#UNREAD_DISAGREES}).</li>
 * </ul>
 * A PENDING send that was committed once is fine (the client did not learn the outcome); a PENDING
 * or REJECTED send that is not committed is fine too.
 */
public final class Checker {
    /** How many seqs a violation lists before it summarises the rest. */
    static final int MAX_LISTED = 10;
    /** How long an install may still receive events after it was reinstalled (the documented revocation bound). */
    static final long REVOCATION_BOUND_MILLIS = 2_000;
    static final long OPEN = Long.MAX_VALUE;

    private Checker() {}

    public static CheckReport check(History h) {
        List<Violation> out = new ArrayList<>();
        Map<String, List<CommittedEvent>> committed = nz(h.committed());
        Map<String, Long> heads = nz(h.heads());
        List<SendRecord> sends = nz(h.sends());
        List<TopicRecord> topic = nz(h.topic());
        List<DeviceRecord> devices = nz(h.devices());

        Map<String, Map<Long, CommittedEvent>> bySeq = new TreeMap<>();
        committed.forEach((conv, evs) -> {
            Map<Long, CommittedEvent> m = bySeq.computeIfAbsent(conv, k -> new TreeMap<>());
            for (CommittedEvent e : nz(evs)) m.put(e.seq(), e);
        });

        ChangeChecks changes = ChangeChecks.of(bySeq, sends);
        checkSends(sends, bySeq, changes, out);
        checkCommittedMessages(committed, sends, changes, out);
        changes.checkLog(bySeq, out);
        checkSeqs(bySeq, heads, out);
        checkTopic(committed, topic, out);
        Map<String, Map<String, List<Period>>> periods = periodsFromLog(bySeq, out);
        checkMembership(periods, nz(h.visibility()), nz(h.membershipOps()), bySeq, out);

        long storedAll = 0;
        long seenAll = 0;
        long reports = 0;
        long readReports = 0;
        Map<String, Map<String, Long>> readCursors = nz(h.readCursors());
        for (DeviceRecord d : devices) {
            storedAll += nz(d.storedEvents()).size();
            seenAll += nz(d.seen()).size();
            reports += nz(d.cursorReports()).size();
            readReports += nz(d.readReports()).size();
            DeviceChecks.check(d, bySeq, heads, periods, readCursors, changes, out);
        }
        ReadChecks.checkFinalUnread(devices, bySeq, periods, readCursors, out);

        Map<String, Long> figures = new LinkedHashMap<>();
        figures.put("sends", (long) sends.size());
        figures.put("sent", count(sends, Outcome.SENT));
        figures.put("rejected", count(sends, Outcome.REJECTED));
        figures.put("pending", count(sends, Outcome.PENDING));
        figures.put("committed messages", committed.values().stream()
                .flatMap(l -> nz(l).stream()).filter(e -> "msg".equals(e.kind())).count());
        changes.figures(figures);
        figures.put("topic records", (long) topic.size());
        figures.put("topic duplicates", (long) topic.size() - new HashSet<>(topic).size());
        // Resends answered from the existing row (cmid dedup, D2): duplicates the write path absorbed.
        figures.put("sent dup:true replies", sends.stream().flatMap(s -> nz(s.replies()).stream()).filter(SentReply::dup).count());
        figures.put("membership ops", (long) nz(h.membershipOps()).size());
        figures.put("installs", (long) devices.size());
        figures.put("online installs", devices.stream().filter(DeviceRecord::online).count());
        figures.put("frames inspected for visibility", seenAll);
        figures.put("stored events", storedAll);
        figures.put("cursor reports", reports);
        figures.put("read state reports", readReports);
        figures.put("unread counts compared", devices.stream().filter(DeviceRecord::online)
                .mapToLong(d -> nz(d.unread()).size()).sum());
        figures.put("violations", (long) out.size());
        return new CheckReport(List.copyOf(out), figures);
    }

    /** Counts violations per kind, in {@link Kind} order, only kinds that occur. */
    public static Map<Kind, Long> countByKind(Collection<Violation> violations) {
        Map<Kind, Long> m = new java.util.EnumMap<>(Kind.class);
        for (Violation v : violations) m.merge(v.kind(), 1L, Long::sum);
        return m;
    }

    // ---- writes -------------------------------------------------------------------------------

    private static void checkSends(List<SendRecord> sends, Map<String, Map<Long, CommittedEvent>> bySeq,
                                   ChangeChecks changes, List<Violation> out) {
        for (SendRecord s : sends) {
            List<SentReply> replies = nz(s.replies());
            if (replies.isEmpty()) continue;
            String where = "conv=" + s.conv() + " device=" + s.device() + " user=" + s.user()
                    + " seq=" + s.seq() + " cmid=" + s.cmid();
            Set<Long> seqs = new TreeSet<>();
            long fresh = 0;
            for (SentReply r : replies) {
                seqs.add(r.seq());
                if (!r.dup()) fresh++;
            }
            if (seqs.size() > 1) {
                out.add(new Violation(Kind.DUPLICATE_WRITE, where + ": its sent replies name different seqs " + seqs));
            }
            if (fresh > 1) {
                out.add(new Violation(Kind.DUPLICATE_WRITE, where + ": " + fresh
                        + " sent replies said dup:false (only one attempt can have inserted it)"));
            }
            for (long seq : seqs) {
                CommittedEvent e = bySeq.getOrDefault(s.conv(), Map.of()).get(seq);
                String at = where.replace(" seq=" + s.seq() + " ", " seq=" + seq + " ");
                if (e == null) {
                    out.add(new Violation(Kind.LOST_WRITE, at + ": acknowledged by sent but no committed event has that seq"));
                    continue;
                }
                List<String> diffs = sendDiffs(s, e, changes);
                // A recall of a message already recalled is answered with the first recall (dup:true, its seq).
                boolean earlierRecall = "recall".equals(s.kind()) && replies.stream().allMatch(SentReply::dup);
                if (!Objects.equals(e.cmid(), s.cmid()) && !earlierRecall) diffs.add("cmid " + e.cmid());
                if (!diffs.isEmpty()) {
                    out.add(new Violation(Kind.LOST_WRITE, at + ": the committed event at that seq differs: " + String.join(", ", diffs)));
                }
            }
        }
    }

    /**
     * How a committed event differs from the send it is said to be (kind, ref, body, sender); a recalled
     * message's or edit's empty body is its body as sent.
     */
    private static List<String> sendDiffs(SendRecord s, CommittedEvent e, ChangeChecks changes) {
        List<String> diffs = new ArrayList<>();
        if (!Objects.equals(s.kind(), e.kind())) diffs.add("kind " + e.kind());
        if (s.ref() != e.ref()) diffs.add("ref " + e.ref());
        boolean emptied = changes.recalled(e.conv(), e.seq()) && emptyIfNull(e.body()).isEmpty();
        if (!Objects.equals(e.body(), s.body()) && !emptied) {
            diffs.add("body " + abbreviate(e.body()) + " instead of " + abbreviate(s.body()));
        }
        if (!Objects.equals(e.sender(), s.user())) diffs.add("sender " + e.sender());
        return diffs;
    }

    /** Every committed message, edit and recall is one of the recorded sends (same sender, cmid, conversation, kind, ref and body). */
    private static void checkCommittedMessages(Map<String, List<CommittedEvent>> committed, List<SendRecord> sends,
                                               ChangeChecks changes, List<Violation> out) {
        Map<List<String>, SendRecord> byKey = new HashMap<>();
        for (SendRecord s : sends) byKey.put(List.of(String.valueOf(s.user()), String.valueOf(s.cmid())), s);
        new TreeMap<>(committed).forEach((conv, evs) -> {
            for (CommittedEvent e : nz(evs)) {
                if (e.cmid() == null) continue;   // join, leave
                String where = "conv=" + conv + " seq=" + e.seq() + " sender=" + e.sender() + " cmid=" + e.cmid();
                SendRecord s = byKey.get(List.of(String.valueOf(e.sender()), String.valueOf(e.cmid())));
                if (s == null) {
                    out.add(new Violation(Kind.PHANTOM_WRITE, where + ": committed, but no client of that user sent this cmid"));
                } else if (!Objects.equals(s.conv(), conv) || !sendDiffs(s, e, changes).isEmpty()) {
                    out.add(new Violation(Kind.PHANTOM_WRITE, where + ": committed as " + e.kind() + " " + abbreviate(e.body())
                            + ", but the send with this cmid was conv=" + s.conv() + " " + s.kind() + " body " + abbreviate(s.body())));
                }
            }
        });
    }

    private static void checkSeqs(Map<String, Map<Long, CommittedEvent>> bySeq, Map<String, Long> heads, List<Violation> out) {
        Set<String> convs = new TreeSet<>(bySeq.keySet());
        convs.addAll(heads.keySet());
        for (String conv : convs) {
            Long headOrNull = heads.get(conv);
            long head = headOrNull == null ? 0 : headOrNull;
            Set<Long> seqs = bySeq.getOrDefault(conv, Map.of()).keySet();
            if (headOrNull == null && !seqs.isEmpty()) {
                out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + ": committed events but no head"));
            }
            List<Long> outside = seqs.stream().filter(s -> s < 1 || s > head).toList();
            if (!outside.isEmpty()) {
                out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + " seq=" + list(outside) + ": outside 1.." + head));
            }
            long s = 1;
            while (s <= head) {
                if (seqs.contains(s)) {
                    s++;
                    continue;
                }
                long from = s;
                while (s <= head && !seqs.contains(s)) s++;
                long to = s - 1;
                out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + " seq=" + (from == to ? from + "" : from + ".." + to)
                        + ": missing below head " + head));
            }
        }
    }

    private static void checkTopic(Map<String, List<CommittedEvent>> committed, List<TopicRecord> topic, List<Violation> out) {
        Set<TopicRecord> onTopic = new HashSet<>(topic);
        new TreeMap<>(committed).forEach((conv, evs) -> {
            for (CommittedEvent e : nz(evs)) {
                if (!onTopic.contains(new TopicRecord(conv, e.seq()))) {
                    out.add(new Violation(Kind.NOT_ON_TOPIC, "conv=" + conv + " seq=" + e.seq() + " kind=" + e.kind()
                            + " sender=" + e.sender() + " cmid=" + e.cmid() + ": committed but never on the event topic"));
                }
            }
        });
    }

    // ---- membership ---------------------------------------------------------------------------

    /** The visibility periods the log's join/leave events define: a join opens one, the next leave of that user closes it. */
    static Map<String, Map<String, List<Period>>> periodsFromLog(Map<String, Map<Long, CommittedEvent>> bySeq,
                                                                 List<Violation> out) {
        Map<String, Map<String, List<Period>>> periods = new TreeMap<>();
        bySeq.forEach((conv, evs) -> {
            Map<String, List<Period>> byUser = periods.computeIfAbsent(conv, k -> new TreeMap<>());
            for (CommittedEvent e : evs.values()) {
                boolean join = "join".equals(e.kind());
                if (!join && !"leave".equals(e.kind())) continue;
                for (String user : e.members()) {   // a bulk join opens a period for each of its users
                    List<Period> ps = byUser.computeIfAbsent(user, k -> new ArrayList<>());
                    boolean member = !ps.isEmpty() && ps.get(ps.size() - 1).to() == OPEN;
                    String where = "conv=" + conv + " seq=" + e.seq() + " user=" + user;
                    if (join && member) {
                        out.add(new Violation(Kind.MEMBERSHIP_MISMATCH, where + ": join event of a user who is already a member"));
                    } else if (join) {
                        ps.add(new Period(e.seq(), OPEN));
                    } else if (member) {
                        ps.set(ps.size() - 1, new Period(ps.get(ps.size() - 1).from(), e.seq()));
                    } else {
                        out.add(new Violation(Kind.MEMBERSHIP_MISMATCH, where + ": leave event of a user who is not a member"));
                    }
                }
            }
            byUser.values().removeIf(List::isEmpty);
        });
        return periods;
    }

    private static void checkMembership(Map<String, Map<String, List<Period>>> fromLog,
                                        Map<String, Map<String, List<Period>>> table, List<MembershipOp> ops,
                                        Map<String, Map<Long, CommittedEvent>> bySeq, List<Violation> out) {
        Set<String> convs = new TreeSet<>(fromLog.keySet());
        convs.addAll(table.keySet());
        for (String conv : convs) {
            Map<String, List<Period>> a = nz(fromLog.get(conv));
            Map<String, List<Period>> b = nz(table.get(conv));
            Set<String> users = new TreeSet<>(a.keySet());
            users.addAll(b.keySet());
            for (String u : users) {
                List<Period> pa = nz(a.get(u));
                List<Period> pb = nz(b.get(u));
                if (!pa.equals(pb)) {
                    out.add(new Violation(Kind.MEMBERSHIP_MISMATCH, "conv=" + conv + " user=" + u + ": the log's periods "
                            + pa + " differ from the memberships table " + pb));
                }
            }
        }
        for (MembershipOp op : ops) {
            if (!op.changed()) continue;
            CommittedEvent e = bySeq.getOrDefault(op.conv(), Map.of()).get(op.seq());
            if (e == null || !op.kind().equals(e.kind()) || !e.members().contains(op.user())) {
                out.add(new Violation(Kind.MEMBERSHIP_MISMATCH, "conv=" + op.conv() + " seq=" + op.seq() + " user=" + op.user()
                        + ": the admin API answered " + op.kind() + " at this seq, the log has "
                        + (e == null ? "nothing" : e.kind() + " of " + e.sender())));
            }
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static long count(List<SendRecord> sends, Outcome o) {
        return sends.stream().filter(s -> s.outcome() == o).count();
    }

    /** {@code a,b,c} or {@code a,b,...(+n more)}: a list for a detail, capped at {@link #MAX_LISTED}. */
    static String list(List<?> items) {
        Collection<?> distinct = new LinkedHashSet<>(items);
        StringBuilder sb = new StringBuilder();
        int i = 0;
        for (Object o : distinct) {
            if (i == MAX_LISTED) {
                sb.append(",...(+").append(distinct.size() - MAX_LISTED).append(" more)");
                break;
            }
            if (i++ > 0) sb.append(',');
            sb.append(o);
        }
        return sb.toString();
    }

    static String emptyIfNull(String s) {
        return s == null ? "" : s;
    }

    static String abbreviate(String s) {
        if (s == null) return "null";
        return s.length() <= 40 ? "\"" + s + "\"" : "\"" + s.substring(0, 37) + "...\"";
    }

    static <K, V> Map<K, V> nz(Map<K, V> m) {
        return m == null ? Map.of() : m;
    }

    static <T> List<T> nz(List<T> l) {
        return l == null ? List.of() : l;
    }
}
