package im.reliability;

import im.reliability.History.CommittedEvent;
import im.reliability.History.DeviceRecord;
import im.reliability.History.Period;
import im.reliability.History.Seen;
import im.reliability.History.SendRecord;
import im.reliability.History.SentReply;
import im.reliability.History.Source;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import static im.reliability.Checker.abbreviate;
import static im.reliability.Checker.emptyIfNull;
import static im.reliability.Checker.list;
import static im.reliability.Checker.nz;

/**
 * The checker's rules for edits and recalls ({@link Checker} has the list), and what the other rules
 * need to know of them: which events of the log a recall emptied, their bodies as sent, and when the
 * recaller was told the recall committed.
 *
 * <p>Everything is derived from the log (a {@code recall} event with {@code ref} r empties the
 * message r and every {@code edit} with ref r) and the recorded sends, never from a column the
 * platform sets: a recall the platform applied wrongly shows as a difference.
 */
final class ChangeChecks {
    /** conv -> seq of a recalled message or edit -> seq of the recall that emptied it. */
    private final Map<String, Map<Long, Long>> recalledBy = new TreeMap<>();
    /** conv -> seq of a recalled message or edit -> its body as its sender sent it (null if no send is recorded). */
    private final Map<String, Map<Long, String>> sentBody = new HashMap<>();
    /** conv -> seq of a recall -> when the first {@code sent} naming it reached a recaller (absent if none was timed). */
    private final Map<String, Map<Long, Long>> recallToldAt = new HashMap<>();
    /** conv -> seq of a message -> its edits' seqs, ascending. */
    private final Map<String, Map<Long, List<Long>>> edits = new HashMap<>();
    private long recalls;
    private long editCount;
    /** Events of recalled messages or edits in pages whose request left after the recall was confirmed: what the timed rule judged. */
    private long timedReads;

    private ChangeChecks() {}

    static ChangeChecks of(Map<String, Map<Long, CommittedEvent>> bySeq, List<SendRecord> sends) {
        ChangeChecks c = new ChangeChecks();
        bySeq.forEach((conv, log) -> {
            for (CommittedEvent e : log.values()) {
                if ("edit".equals(e.kind())) {
                    c.editCount++;
                    c.edits.computeIfAbsent(conv, k -> new HashMap<>()).computeIfAbsent(e.ref(), k -> new ArrayList<>()).add(e.seq());
                } else if ("recall".equals(e.kind())) {
                    c.recalls++;
                    Map<Long, Long> by = c.recalledBy.computeIfAbsent(conv, k -> new TreeMap<>());
                    by.putIfAbsent(e.ref(), e.seq());
                }
            }
            Map<Long, Long> by = c.recalledBy.getOrDefault(conv, Map.of());
            for (CommittedEvent e : log.values()) {
                if ("edit".equals(e.kind()) && by.containsKey(e.ref())) by.putIfAbsent(e.seq(), by.get(e.ref()));
            }
        });
        Map<List<String>, SendRecord> byKey = new HashMap<>();
        for (SendRecord s : sends) byKey.put(List.of(String.valueOf(s.user()), String.valueOf(s.cmid())), s);
        c.recalledBy.forEach((conv, by) -> by.keySet().forEach(seq -> {
            CommittedEvent e = bySeq.get(conv).get(seq);
            SendRecord s = e == null ? null : byKey.get(List.of(String.valueOf(e.sender()), String.valueOf(e.cmid())));
            c.sentBody.computeIfAbsent(conv, k -> new HashMap<>()).put(seq, s == null ? null : s.body());
        }));
        for (SendRecord s : sends) {
            if (!"recall".equals(s.kind())) continue;
            for (SentReply r : nz(s.replies())) {
                if (r.atMillis() > 0) c.recallToldAt.computeIfAbsent(s.conv(), k -> new HashMap<>()).merge(r.seq(), r.atMillis(), Math::min);
            }
        }
        return c;
    }

    /** Whether a recall of the log emptied the event at {@code seq}. */
    boolean recalled(String conv, long seq) {
        return nz(recalledBy.get(conv)).containsKey(seq);
    }

    /**
     * Whether {@code body} is one the event at {@code seq} may carry: the committed one, or, for an
     * event a recall emptied, none or its body as sent (a push that left before the recall; whether it
     * was served too late is {@link Kind#RECALLED_BODY_SERVED}'s to judge).
     */
    boolean bodyMatches(CommittedEvent committed, String body) {
        if (Objects.equals(emptyIfNull(committed.body()), emptyIfNull(body))) return true;
        return recalled(committed.conv(), committed.seq()) && (emptyIfNull(body).isEmpty()
                || Objects.equals(nz(sentBody.get(committed.conv())).get(committed.seq()), body));
    }

    void figures(Map<String, Long> figures) {
        figures.put("committed edits", editCount);
        figures.put("committed recalls", recalls);
        figures.put("recalled messages and edits", recalledBy.values().stream().mapToLong(Map::size).sum());
        figures.put("recalled events read after the recall was confirmed", timedReads);
    }

    /** The log itself: every message and edit a recall emptied has an empty body in PostgreSQL. */
    void checkLog(Map<String, Map<Long, CommittedEvent>> bySeq, List<Violation> out) {
        recalledBy.forEach((conv, by) -> by.forEach((seq, recall) -> {
            CommittedEvent e = bySeq.get(conv).get(seq);
            if (e != null && !emptyIfNull(e.body()).isEmpty()) {
                out.add(new Violation(Kind.RECALLED_BODY_SERVED, "conv=" + conv + " seq=" + seq + " cmid=" + e.cmid()
                        + ": recalled by seq " + recall + " but the events row still holds " + abbreviate(e.body())));
            }
        }));
    }

    /** One install: what its reads were served after a recall was confirmed, what its store and its SDK show at the end. */
    void checkDevice(DeviceRecord d, Map<String, Map<Long, CommittedEvent>> bySeq,
                     Map<String, Map<String, List<Period>>> periods, List<Violation> out) {
        String dev = "device=" + d.device() + " epoch=" + d.epoch() + " user=" + d.user();
        Map<String, List<String>> served = new TreeMap<>();
        for (Seen s : nz(d.seen())) {
            CommittedEvent e = s.event();
            if (s.source() == Source.PUSH || s.requestAtMillis() <= 0) continue;
            Long recall = nz(recalledBy.get(e.conv())).get(e.seq());
            Long told = recall == null ? null : nz(recallToldAt.get(e.conv())).get(recall);
            if (told == null || s.requestAtMillis() <= told) continue;
            timedReads++;
            if (!emptyIfNull(e.body()).isEmpty()) {
                served.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq() + " (" + s.source() + " requested at "
                        + s.requestAtMillis() + ", recall " + recall + " confirmed to its sender at " + told + ")");
            }
        }
        served.forEach((conv, seqs) -> out.add(new Violation(Kind.RECALLED_BODY_SERVED, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": a read requested after the recall was confirmed carried the body")));

        new TreeMap<>(nz(d.bodies())).forEach((conv, bodies) -> {
            List<Long> kept = new ArrayList<>();
            List<Period> ps = nz(nz(periods.get(conv)).get(d.user()));
            bodies.forEach((seq, body) -> {
                if (!body.isEmpty() && holdsRecall(d, conv, seq, ps)) kept.add(seq);
            });
            if (!kept.isEmpty()) {
                out.add(new Violation(Kind.RECALLED_BODY_SERVED, "conv=" + conv + " " + dev + " seq=" + list(kept)
                        + ": the store holds the body of a message or edit whose recall it holds (or passed)"));
            }
        });
        if (!d.online()) return;
        new TreeMap<>(nz(d.shown())).forEach((conv, shown) -> {
            List<String> notRecalled = new ArrayList<>();
            List<String> notEdited = new ArrayList<>();
            List<Period> ps = nz(nz(periods.get(conv)).get(d.user()));
            Map<Long, CommittedEvent> log = bySeq.getOrDefault(conv, Map.of());
            shown.forEach((seq, text) -> {
                if (recalled(conv, seq)) {
                    if (!text.isEmpty() && holdsRecall(d, conv, seq, ps)) notRecalled.add(seq + " shows " + abbreviate(text));
                    return;
                }
                CommittedEvent latest = log.get(seq);
                for (long edit : nz(nz(edits.get(conv)).get(seq))) {
                    if (DeviceChecks.isVisible(ps, edit)) latest = log.get(edit);
                }
                if (latest != null && !Objects.equals(emptyIfNull(latest.body()), text)) {
                    notEdited.add(seq + " shows " + abbreviate(text) + " instead of " + abbreviate(latest.body())
                            + (latest.seq() == seq ? " (no edit)" : " (edit " + latest.seq() + ")"));
                }
            });
            if (!notRecalled.isEmpty()) {
                out.add(new Violation(Kind.RECALL_NOT_APPLIED, "conv=" + conv + " " + dev + " seq=" + list(notRecalled)
                        + ": online at the end, its recall stored, the SDK's local query still shows the text"));
            }
            if (!notEdited.isEmpty()) {
                out.add(new Violation(Kind.EDIT_NOT_APPLIED, "conv=" + conv + " " + dev + " seq=" + list(notEdited)
                        + ": online at the end, the SDK's local query does not show the latest edit visible to the user"));
            }
        });
    }

    /**
     * Whether the install holds the recall of the event at {@code seq}: stored it, or its cursor passed
     * it while the user could see it (a cursor passes seqs outside the user's periods without storing them).
     */
    private boolean holdsRecall(DeviceRecord d, String conv, long seq, List<Period> periods) {
        Long recall = nz(recalledBy.get(conv)).get(seq);
        if (recall == null) return false;
        return nz(nz(d.stored()).get(conv)).contains(recall)
                || nz(d.localCursor()).getOrDefault(conv, 0L) >= recall && DeviceChecks.isVisible(periods, recall);
    }
}
