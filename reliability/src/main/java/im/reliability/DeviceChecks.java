package im.reliability;

import im.reliability.History.CommittedEvent;
import im.reliability.History.CursorReport;
import im.reliability.History.DeviceRecord;
import im.reliability.History.Period;
import im.reliability.History.Seen;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import static im.reliability.Checker.OPEN;
import static im.reliability.Checker.REVOCATION_BOUND_MILLIS;
import static im.reliability.Checker.abbreviate;
import static im.reliability.Checker.emptyIfNull;
import static im.reliability.Checker.list;
import static im.reliability.Checker.nz;

/**
 * The checker's rules for one device install ({@link Checker} has the list): what its socket was
 * told (visibility, content, reads after a reinstall), what it stored, the cursors the server
 * reported to it, and its store and cursors at the end against the visible log; the read states it
 * was told are {@link ReadChecks}'.
 */
final class DeviceChecks {
    private DeviceChecks() {}

    static void check(DeviceRecord d, Map<String, Map<Long, CommittedEvent>> bySeq, Map<String, Long> heads,
                      Map<String, Map<String, List<Period>>> periods, Map<String, Map<String, Long>> readCursors,
                      ChangeChecks changes, List<Violation> out) {
        String dev = "device=" + d.device() + " epoch=" + d.epoch() + " user=" + d.user();
        checkReceived(d, dev, bySeq, periods, changes, out);
        changes.checkDevice(d, bySeq, periods, out);
        checkCursorReports(d, dev, heads, periods, out);
        ReadChecks.checkReports(d, dev, bySeq, heads, periods, readCursors, out);

        Map<String, List<Long>> stored = nz(d.stored());
        Map<String, Long> local = nz(d.localCursor());
        Map<String, Long> server = nz(d.serverCursor());
        Set<String> convs = new TreeSet<>(stored.keySet());
        convs.addAll(local.keySet());
        convs.addAll(server.keySet());
        periods.forEach((conv, byUser) -> {
            if (byUser.containsKey(d.user())) convs.add(conv);
        });
        for (String conv : convs) {
            String where = "conv=" + conv + " " + dev;
            long head = heads.getOrDefault(conv, 0L);
            List<Period> ps = nz(nz(periods.get(conv)).get(d.user()));
            TreeSet<Long> visible = visible(bySeq.getOrDefault(conv, Map.of()).keySet(), ps);
            List<Long> st = nz(stored.get(conv));
            Set<Long> storedSet = new HashSet<>(st);

            List<Long> invisible = st.stream().filter(s -> !visible.contains(s)).distinct().toList();
            if (!invisible.isEmpty()) {
                out.add(new Violation(Kind.STORE_INVISIBLE, where + " seq=" + list(invisible)
                        + ": in the store at the end, outside the user's visibility periods " + ps));
            }

            long lc = local.getOrDefault(conv, 0L);
            long sc = server.getOrDefault(conv, 0L);
            boolean open = ps.stream().anyMatch(p -> p.to() == OPEN);
            long lastVisible = visible.isEmpty() ? 0 : visible.last();
            if (open) lastVisible = Math.max(lastVisible, head);
            long upTo = d.online() ? Math.max(lc, lastVisible) : lc;
            List<Long> missing = visible.headSet(upTo, true).stream().filter(s -> !storedSet.contains(s)).toList();
            if (!missing.isEmpty()) {
                out.add(new Violation(Kind.STORE_MISSING, where + " seq=" + list(missing) + ": visible but not stored"
                        + " (local cursor " + lc + (d.online() ? ", online, last visible " + lastVisible : "") + ")"));
            }
            if (sc > lc) {
                out.add(new Violation(Kind.STORE_MISSING, where + " seq=" + sc + ": server cursor " + sc
                        + " is above the device's local cursor " + lc + " (D3: acked more than it durably stored)"));
            }
            if (lc > head) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + " seq=" + lc + ": local cursor above head " + head));
            }
            if (sc > head) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + " seq=" + sc + ": server cursor above head " + head));
            }
            if (d.online() && open && (lc < lastVisible || sc < lastVisible)) {
                out.add(new Violation(Kind.NOT_CONVERGED, where + " seq=" + lastVisible + ": local cursor " + lc
                        + ", server cursor " + sc + " below the last visible seq " + lastVisible));
            }
        }
        // An offline device cannot send: its outbox waits for it (checked again once it is back online).
        if (d.online() && d.outboxLeft() > 0) {
            out.add(new Violation(Kind.OUTBOX_NOT_EMPTY, dev + ": " + d.outboxLeft() + " send(s) left in the outbox"));
        }
    }

    /** Frames received and events stored: visible, as committed, stored once, not long after a reinstall. */
    private static void checkReceived(DeviceRecord d, String dev, Map<String, Map<Long, CommittedEvent>> bySeq,
                                      Map<String, Map<String, List<Period>>> periods, ChangeChecks changes,
                                      List<Violation> out) {
        Map<String, List<Long>> invisibleFrames = new TreeMap<>();
        Map<String, List<String>> wrongFrames = new TreeMap<>();
        Map<String, List<Long>> late = new TreeMap<>();
        for (Seen s : nz(d.seen())) {
            CommittedEvent e = s.event();
            if (!isVisible(periods, e.conv(), d.user(), e.seq())) {
                invisibleFrames.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq());
            }
            String diff = contentDiff(e, bySeq, changes);
            if (diff != null) wrongFrames.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq() + " (" + s.source() + ": " + diff + ")");
            if (d.retiredMillis() > 0 && s.atMillis() > d.retiredMillis() + REVOCATION_BOUND_MILLIS) {
                late.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq());
            }
        }
        invisibleFrames.forEach((conv, seqs) -> out.add(new Violation(Kind.FRAME_INVISIBLE, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": pushed or synced outside the user's visibility periods "
                + nz(nz(periods.get(conv)).get(d.user())))));
        wrongFrames.forEach((conv, seqs) -> out.add(new Violation(Kind.CONTENT_MISMATCH, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": received an event that differs from the committed one")));
        late.forEach((conv, seqs) -> out.add(new Violation(Kind.STALE_INSTALL_READ, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": received more than " + REVOCATION_BOUND_MILLIS + " ms after the device was reinstalled")));

        Map<String, List<Long>> invisibleStored = new TreeMap<>();
        Map<String, List<String>> wrongStored = new TreeMap<>();
        Map<String, List<Long>> twice = new TreeMap<>();
        Set<List<Object>> once = new HashSet<>();
        for (CommittedEvent e : nz(d.storedEvents())) {
            if (!isVisible(periods, e.conv(), d.user(), e.seq())) {
                invisibleStored.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq());
            }
            String diff = contentDiff(e, bySeq, changes);
            if (diff != null) wrongStored.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq() + " (" + diff + ")");
            if (!once.add(List.of(e.conv(), e.seq()))) twice.computeIfAbsent(e.conv(), k -> new ArrayList<>()).add(e.seq());
        }
        invisibleStored.forEach((conv, seqs) -> out.add(new Violation(Kind.STORE_INVISIBLE, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": stored outside the user's visibility periods " + nz(nz(periods.get(conv)).get(d.user())))));
        wrongStored.forEach((conv, seqs) -> out.add(new Violation(Kind.CONTENT_MISMATCH, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": stored an event that differs from the committed one")));
        twice.forEach((conv, seqs) -> out.add(new Violation(Kind.STORE_DUPLICATE, "conv=" + conv + " " + dev
                + " seq=" + list(seqs) + ": reported stored for the first time more than once")));
    }

    /** Reported cursors: non-decreasing per conversation, never above the last seq visible to the user. */
    private static void checkCursorReports(DeviceRecord d, String dev, Map<String, Long> heads,
                                           Map<String, Map<String, List<Period>>> periods, List<Violation> out) {
        Map<String, Long> last = new HashMap<>();
        Map<String, Integer> index = new HashMap<>();
        for (CursorReport r : nz(d.cursorReports())) {
            String where = "conv=" + r.conv() + " " + dev + " seq=" + r.delivered();
            int i = index.merge(r.conv(), 1, Integer::sum);
            Long prev = last.put(r.conv(), r.delivered());
            if (prev != null && r.delivered() < prev) {
                out.add(new Violation(Kind.CURSOR_REGRESSED, where + ": " + r.source() + " reported cursor " + r.delivered()
                        + " after " + prev + " (report #" + i + ")"));
            }
            long visibleHead = visibleHead(nz(nz(periods.get(r.conv())).get(d.user())), heads.getOrDefault(r.conv(), 0L));
            if (r.delivered() > visibleHead) {
                out.add(new Violation(Kind.CURSOR_ABOVE_HEAD, where + ": " + r.source() + " reported cursor " + r.delivered()
                        + " above the head visible to the user, " + visibleHead + " (report #" + i + ")"));
            }
        }
    }

    /** The highest seq the user may ever have been told about: the head while a member, else the last leave. */
    static long visibleHead(List<Period> periods, long head) {
        long v = 0;
        for (Period p : periods) v = Math.max(v, Math.min(p.to(), head));
        return v;
    }

    /**
     * What differs between a received or stored event and the committed one; null if nothing does. A
     * recalled message or edit may carry its body as sent, or none (see {@link ChangeChecks#bodyMatches}).
     */
    private static String contentDiff(CommittedEvent got, Map<String, Map<Long, CommittedEvent>> bySeq, ChangeChecks changes) {
        CommittedEvent c = bySeq.getOrDefault(got.conv(), Map.of()).get(got.seq());
        if (c == null) return "no such committed event";
        List<String> diffs = new ArrayList<>();
        if (!Objects.equals(c.kind(), got.kind())) diffs.add("kind " + got.kind() + " instead of " + c.kind());
        if (!Objects.equals(c.mid(), got.mid())) diffs.add("mid " + got.mid() + " instead of " + c.mid());
        if (!Objects.equals(c.sender(), got.sender())) diffs.add("sender " + got.sender() + " instead of " + c.sender());
        if (!Objects.equals(c.cmid(), got.cmid())) diffs.add("cmid " + got.cmid() + " instead of " + c.cmid());
        if (c.ref() != got.ref()) diffs.add("ref " + got.ref() + " instead of " + c.ref());
        if (!changes.bodyMatches(c, got.body())) {
            diffs.add("body " + abbreviate(got.body()) + " instead of " + abbreviate(c.body()));
        }
        return diffs.isEmpty() ? null : String.join(", ", diffs);
    }

    private static boolean isVisible(Map<String, Map<String, List<Period>>> periods, String conv, String user, long seq) {
        return isVisible(nz(nz(periods.get(conv)).get(user)), seq);
    }

    static boolean isVisible(List<Period> periods, long seq) {
        for (Period p : periods) {
            if (p.from() <= seq && seq <= p.to()) return true;
        }
        return false;
    }

    /** The committed seqs inside any of the periods, ascending. */
    static TreeSet<Long> visible(Collection<Long> committedSeqs, List<Period> periods) {
        TreeSet<Long> v = new TreeSet<>();
        for (long s : committedSeqs) {
            if (isVisible(periods, s)) v.add(s);
        }
        return v;
    }

}
