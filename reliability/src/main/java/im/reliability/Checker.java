package im.reliability;

import im.reliability.History.CommittedEvent;
import im.reliability.History.DeviceRecord;
import im.reliability.History.Outcome;
import im.reliability.History.Period;
import im.reliability.History.SendRecord;
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
 * <p>The rules, each reported as a {@link Violation} whose detail names the conversation, device,
 * seq and cmid it concerns:
 * <ul>
 *   <li>{@link Kind#LOST_WRITE}: every SENT send is in {@code committed[conv]} with its seq, kind
 *       {@code msg}, the same cmid, body and sender (D1, D6).</li>
 *   <li>{@link Kind#DUPLICATE_WRITE}: no (sender, cmid) is committed twice; no two SENT records of
 *       one (user, cmid) report different seqs (D2).</li>
 *   <li>{@link Kind#SEQ_GAP}: each conversation's committed seqs are exactly 1..head.</li>
 *   <li>{@link Kind#NOT_ON_TOPIC}: every committed (conv, seq) is on the event topic at least once.</li>
 *   <li>Per device and conversation, with visible = committed seqs inside the user's periods:
 *       stored seqs strictly ascending ({@link Kind#STORE_DUPLICATE}) and visible
 *       ({@link Kind#STORE_INVISIBLE}); every visible seq &le; the local cursor stored, and the
 *       server cursor not above the local one ({@link Kind#STORE_MISSING}, D3); cursors and the
 *       cursor history not above the head ({@link Kind#CURSOR_ABOVE_HEAD}) and the history
 *       non-decreasing ({@link Kind#CURSOR_REGRESSED}, D4); outbox empty
 *       ({@link Kind#OUTBOX_NOT_EMPTY}).</li>
 *   <li>Online devices in addition: with an open period, local and server cursor at the last visible
 *       seq ({@link Kind#NOT_CONVERGED}); every visible seq stored ({@link Kind#STORE_MISSING}).</li>
 * </ul>
 * A PENDING send that was committed once is fine (the client did not learn the outcome); a PENDING
 * or REJECTED send that is not committed is fine too.
 */
public final class Checker {
    /** How many seqs a store violation lists before it summarises the rest. */
    static final int MAX_LISTED = 10;

    private Checker() {}

    public static CheckReport check(History h) {
        List<Violation> out = new ArrayList<>();
        Map<String, List<CommittedEvent>> committed = nz(h.committed());
        Map<String, Long> heads = nz(h.heads());
        Map<String, Map<String, List<Period>>> visibility = nz(h.visibility());
        List<SendRecord> sends = nz(h.sends());
        List<TopicRecord> topic = nz(h.topic());
        List<DeviceRecord> devices = nz(h.devices());
        Set<String> online = new HashSet<>(nz(h.online()));

        // Committed events by conv and seq (the first one wins for a duplicated seq; SEQ_GAP reports it).
        Map<String, Map<Long, CommittedEvent>> bySeq = new TreeMap<>();
        committed.forEach((conv, evs) -> {
            Map<Long, CommittedEvent> m = bySeq.computeIfAbsent(conv, k -> new TreeMap<>());
            for (CommittedEvent e : nz(evs)) {
                m.putIfAbsent(e.seq(), e);
            }
        });

        checkSends(sends, bySeq, out);
        checkCommittedCmids(committed, out);
        checkSeqs(committed, heads, out);
        checkTopic(committed, topic, out);
        long storedAll = 0;
        for (DeviceRecord d : devices) {
            storedAll += checkDevice(d, online.contains(d.device()), bySeq, heads, visibility, out);
        }

        Map<String, Long> figures = new LinkedHashMap<>();
        figures.put("sends", (long) sends.size());
        figures.put("sent", count(sends, Outcome.SENT));
        figures.put("rejected", count(sends, Outcome.REJECTED));
        figures.put("pending", count(sends, Outcome.PENDING));
        figures.put("committed messages", committed.values().stream()
                .flatMap(l -> nz(l).stream()).filter(e -> "msg".equals(e.kind())).count());
        figures.put("topic records", (long) topic.size());
        figures.put("topic duplicates", (long) topic.size() - new HashSet<>(topic).size());
        figures.put("devices", (long) devices.size());
        figures.put("online devices", devices.stream().filter(d -> online.contains(d.device())).count());
        figures.put("stored events", storedAll);
        figures.put("violations", (long) out.size());
        return new CheckReport(List.copyOf(out), figures);
    }

    /** Counts violations per kind, in {@link Kind} order, only kinds that occur. */
    public static Map<Kind, Long> countByKind(Collection<Violation> violations) {
        Map<Kind, Long> m = new java.util.EnumMap<>(Kind.class);
        for (Violation v : violations) {
            m.merge(v.kind(), 1L, Long::sum);
        }
        return m;
    }

    // ---- writes -------------------------------------------------------------------------------

    private static void checkSends(List<SendRecord> sends, Map<String, Map<Long, CommittedEvent>> bySeq,
                                   List<Violation> out) {
        Map<List<String>, SendRecord> firstSent = new HashMap<>();
        for (SendRecord s : sends) {
            if (s.outcome() != Outcome.SENT) {
                continue;
            }
            String where = "conv=" + s.conv() + " device=" + s.device() + " user=" + s.user()
                    + " seq=" + s.seq() + " cmid=" + s.cmid();
            SendRecord prev = firstSent.putIfAbsent(List.of(String.valueOf(s.user()), String.valueOf(s.cmid())), s);
            if (prev != null && (prev.seq() != s.seq() || !Objects.equals(prev.conv(), s.conv()))) {
                out.add(new Violation(Kind.DUPLICATE_WRITE, where + ": the same cmid was also reported sent as conv="
                        + prev.conv() + " seq=" + prev.seq() + " (device=" + prev.device() + ")"));
            }
            CommittedEvent e = bySeq.getOrDefault(s.conv(), Map.of()).get(s.seq());
            if (e == null) {
                out.add(new Violation(Kind.LOST_WRITE, where + ": acknowledged by sent but no committed event has that seq"));
                continue;
            }
            List<String> diffs = new ArrayList<>();
            if (!"msg".equals(e.kind())) {
                diffs.add("kind " + e.kind());
            }
            if (!Objects.equals(e.cmid(), s.cmid())) {
                diffs.add("cmid " + e.cmid());
            }
            if (!Objects.equals(e.body(), s.body())) {
                diffs.add("body " + abbreviate(e.body()) + " instead of " + abbreviate(s.body()));
            }
            if (!Objects.equals(e.sender(), s.user())) {
                diffs.add("sender " + e.sender());
            }
            if (!diffs.isEmpty()) {
                out.add(new Violation(Kind.LOST_WRITE, where + ": the committed event at that seq differs: "
                        + String.join(", ", diffs)));
            }
        }
    }

    private static void checkCommittedCmids(Map<String, List<CommittedEvent>> committed, List<Violation> out) {
        Map<List<String>, CommittedEvent> seen = new HashMap<>();
        committed.forEach((conv, evs) -> {
            for (CommittedEvent e : nz(evs)) {
                if (e.cmid() == null) {
                    continue;
                }
                CommittedEvent prev = seen.putIfAbsent(List.of(String.valueOf(e.sender()), e.cmid()), e);
                if (prev != null) {
                    out.add(new Violation(Kind.DUPLICATE_WRITE, "conv=" + conv + " seq=" + e.seq() + " sender="
                            + e.sender() + " cmid=" + e.cmid() + ": committed again (first at conv=" + prev.conv()
                            + " seq=" + prev.seq() + ")"));
                }
            }
        });
    }

    private static void checkSeqs(Map<String, List<CommittedEvent>> committed, Map<String, Long> heads,
                                  List<Violation> out) {
        Set<String> convs = new TreeSet<>(committed.keySet());
        convs.addAll(heads.keySet());
        for (String conv : convs) {
            Long headOrNull = heads.get(conv);
            long head = headOrNull == null ? 0 : headOrNull;
            if (headOrNull == null) {
                out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + ": committed events but no head"));
            }
            Map<Long, Integer> counts = new TreeMap<>();
            for (CommittedEvent e : nz(committed.get(conv))) {
                counts.merge(e.seq(), 1, Integer::sum);
            }
            counts.forEach((seq, n) -> {
                if (n > 1) {
                    out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + " seq=" + seq + ": committed " + n + " times"));
                }
                if (seq < 1 || seq > head) {
                    out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + " seq=" + seq + ": outside 1.." + head));
                }
            });
            long s = 1;
            while (s <= head) {
                if (counts.containsKey(s)) {
                    s++;
                    continue;
                }
                long from = s;
                while (s <= head && !counts.containsKey(s)) {
                    s++;
                }
                long to = s - 1;
                out.add(new Violation(Kind.SEQ_GAP, "conv=" + conv + " seq=" + (from == to ? from + "" : from + ".." + to)
                        + ": missing below head " + head));
            }
        }
    }

    private static void checkTopic(Map<String, List<CommittedEvent>> committed, List<TopicRecord> topic,
                                   List<Violation> out) {
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

    // ---- devices ------------------------------------------------------------------------------

    /** Checks one device; returns how many events it stored. */
    private static long checkDevice(DeviceRecord d, boolean isOnline, Map<String, Map<Long, CommittedEvent>> bySeq,
                                    Map<String, Long> heads, Map<String, Map<String, List<Period>>> visibility,
                                    List<Violation> out) {
        Map<String, List<Long>> stored = nz(d.stored());
        Map<String, Long> local = nz(d.localCursor());
        Map<String, Long> server = nz(d.serverCursor());
        Map<String, List<Long>> history = nz(d.cursorHistory());
        String dev = "device=" + d.device() + " user=" + d.user();

        Set<String> convs = new TreeSet<>(stored.keySet());
        convs.addAll(local.keySet());
        convs.addAll(server.keySet());
        convs.addAll(history.keySet());
        visibility.forEach((conv, byUser) -> {
            if (!nz(periodsOf(byUser, d.user())).isEmpty()) {
                convs.add(conv);
            }
        });

        long storedAll = 0;
        for (String conv : convs) {
            String where = "conv=" + conv + " " + dev;
            long head = heads.getOrDefault(conv, 0L);
            List<Period> periods = nz(periodsOf(visibility.get(conv), d.user()));
            TreeSet<Long> visible = visible(bySeq.getOrDefault(conv, Map.of()).keySet(), periods);
            List<Long> st = nz(stored.get(conv));
            storedAll += st.size();
            Set<Long> storedSet = new HashSet<>(st);

            // STORE_DUPLICATE: strictly ascending.
            List<String> bad = new ArrayList<>();
            for (int i = 1; i < st.size(); i++) {
                if (st.get(i) <= st.get(i - 1)) {
                    bad.add(st.get(i - 1) + "," + st.get(i));
                }
            }
            if (!bad.isEmpty()) {
                out.add(new Violation(Kind.STORE_DUPLICATE, where + " seq=" + list(bad)
                        + ": stored seqs not strictly ascending (repeat or decrease at these pairs)"));
            }

            // STORE_INVISIBLE: every stored seq visible.
            List<Long> invisible = st.stream().filter(s -> !visible.contains(s)).distinct().toList();
            if (!invisible.isEmpty()) {
                out.add(new Violation(Kind.STORE_INVISIBLE, where + " seq=" + list(invisible)
                        + ": stored outside the user's visibility periods " + periods));
            }

            long lc = local.getOrDefault(conv, 0L);
            long sc = server.getOrDefault(conv, 0L);

            // STORE_MISSING: contiguity up to the local cursor, or (online) every visible seq up to the last one.
            long lastVisible = visible.isEmpty() ? 0 : visible.last();
            boolean open = periods.stream().anyMatch(p -> p.to() == Long.MAX_VALUE);
            if (open) {
                lastVisible = Math.max(lastVisible, head);
            }
            long upTo = isOnline ? Math.max(lc, lastVisible) : lc;
            List<Long> missing = visible.headSet(upTo, true).stream().filter(s -> !storedSet.contains(s)).toList();
            if (!missing.isEmpty()) {
                out.add(new Violation(Kind.STORE_MISSING, where + " seq=" + list(missing) + ": visible but not stored"
                        + " (local cursor " + lc + (isOnline ? ", online, last visible " + lastVisible : "") + ")"));
            }
            if (sc > lc) {
                out.add(new Violation(Kind.STORE_MISSING, where + " seq=" + sc + ": server cursor " + sc
                        + " is above the device's local cursor " + lc + " (D3: acked more than it durably stored)"));
            }

            // CURSOR_ABOVE_HEAD.
            if (lc > head) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + " seq=" + lc + ": local cursor above head " + head));
            }
            if (sc > head) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + " seq=" + sc + ": server cursor above head " + head));
            }
            List<Long> hist = nz(history.get(conv));
            List<Long> above = hist.stream().filter(v -> v > head).distinct().toList();
            if (!above.isEmpty()) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + " seq=" + list(above)
                        + ": server reported a cursor above head " + head));
            }

            // CURSOR_REGRESSED.
            for (int i = 1; i < hist.size(); i++) {
                if (hist.get(i) < hist.get(i - 1)) {
                    out.add(new Violation(Kind.CURSOR_REGRESSED, where + " seq=" + hist.get(i)
                            + ": server reported cursor " + hist.get(i) + " after " + hist.get(i - 1)
                            + " (report #" + (i + 1) + " of " + hist.size() + ")"));
                }
            }

            // NOT_CONVERGED: online with an open period.
            if (isOnline && open && (lc < lastVisible || sc < lastVisible)) {
                out.add(new Violation(Kind.NOT_CONVERGED, where + " seq=" + lastVisible + ": local cursor " + lc
                        + ", server cursor " + sc + " below the last visible seq " + lastVisible));
            }
        }

        // An offline device cannot send: its outbox waits for it (checked again once it is back online).
        if (isOnline && d.outboxLeft() > 0) {
            out.add(new Violation(Kind.OUTBOX_NOT_EMPTY, dev + ": " + d.outboxLeft() + " send(s) left in the outbox"));
        }
        return storedAll;
    }

    /** The committed seqs inside any of the periods, ascending. */
    static TreeSet<Long> visible(Collection<Long> committedSeqs, List<Period> periods) {
        TreeSet<Long> v = new TreeSet<>();
        for (long s : committedSeqs) {
            for (Period p : periods) {
                if (p.from() <= s && s <= p.to()) {
                    v.add(s);
                    break;
                }
            }
        }
        return v;
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static List<Period> periodsOf(Map<String, List<Period>> byUser, String user) {
        return byUser == null ? null : byUser.get(user);
    }

    private static long count(List<SendRecord> sends, Outcome o) {
        return sends.stream().filter(s -> s.outcome() == o).count();
    }

    /** {@code a,b,c} or {@code a,b,...(+n more)}: a list for a detail, capped at {@link #MAX_LISTED}. */
    private static String list(List<?> items) {
        Collection<?> distinct = new LinkedHashSet<>(items);
        StringBuilder sb = new StringBuilder();
        int i = 0;
        for (Object o : distinct) {
            if (i == MAX_LISTED) {
                sb.append(",...(+").append(distinct.size() - MAX_LISTED).append(" more)");
                break;
            }
            if (i++ > 0) {
                sb.append(',');
            }
            sb.append(o);
        }
        return sb.toString();
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() <= 40 ? "\"" + s + "\"" : "\"" + s.substring(0, 37) + "...\"";
    }

    private static <K, V> Map<K, V> nz(Map<K, V> m) {
        return m == null ? Map.of() : m;
    }

    private static <T> List<T> nz(List<T> l) {
        return l == null ? List.of() : l;
    }
}
