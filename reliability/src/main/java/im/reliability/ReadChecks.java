package im.reliability;

import im.reliability.History.CommittedEvent;
import im.reliability.History.DeviceRecord;
import im.reliability.History.Period;
import im.reliability.History.ReadReport;
import im.reliability.History.ReadSource;
import im.reliability.Violation.Kind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import static im.reliability.Checker.nz;

/**
 * The checker's rules for read state ({@link Checker} has the list): what each install was told
 * ({@code readack}, {@code unread} pushes, {@code subbed} entries) against the log and the final
 * read cursors, and the SDK's unread counts of a user's online installs at the end.
 *
 * <p>Reports of different devices are not compared by arrival time: a state is stamped when it
 * reached the tap, not when the server took it, and the protocol lets states arrive in any order.
 * What is sound without that order: every reported cursor was the user's cursor at some moment, so
 * none is above the final one (the cursor only moves up); and one install's {@code readack}s answer
 * its reads of a conversation one at a time, so they never decrease.
 */
final class ReadChecks {
    private ReadChecks() {}

    /** Every read state one install was told: counts not negative and as the log gives, cursors within what the user may see. */
    static void checkReports(DeviceRecord d, String dev, Map<String, Map<Long, CommittedEvent>> bySeq, Map<String, Long> heads,
                             Map<String, Map<String, List<Period>>> periods, Map<String, Map<String, Long>> readCursors,
                             List<Violation> out) {
        Map<String, Long> lastAck = new HashMap<>();
        Map<String, Integer> index = new HashMap<>();
        for (ReadReport r : nz(d.readReports())) {
            int i = index.merge(r.conv(), 1, Integer::sum);
            String where = "conv=" + r.conv() + " " + dev + " seq=" + r.read() + ": " + r.source()
                    + " {read " + r.read() + ", unread " + r.unread() + ", head " + r.head() + "} (report #" + i + ")";
            List<Period> ps = nz(nz(periods.get(r.conv())).get(d.user()));
            if (r.unread() < 0) out.add(new Violation(Kind.UNREAD_NEGATIVE, where + ": negative unread count"));
            long visibleHead = DeviceChecks.visibleHead(ps, heads.getOrDefault(r.conv(), 0L));
            if (r.read() > visibleHead || r.head() > visibleHead) {
                out.add(new Violation(Kind.READ_ABOVE_HEAD, where + ": above the head visible to the user, " + visibleHead));
            } else if (r.read() > r.head()) {
                out.add(new Violation(Kind.READ_ABOVE_HEAD, where + ": read cursor above the state's own head"));
            } else if (r.unread() >= 0) {
                long expected = unreadFromLog(bySeq.getOrDefault(r.conv(), Map.of()), ps, d.user(), r.read(), r.head());
                if (r.unread() != expected) {
                    out.add(new Violation(Kind.UNREAD_DISAGREES, where + ": the log has " + expected
                            + " visible message(s) of others in (read, head]"));
                }
            }
            long finalRead = nz(readCursors.get(r.conv())).getOrDefault(d.user(), 0L);
            if (r.read() > finalRead) {
                out.add(new Violation(Kind.READ_REGRESSED, where + ": above the user's read cursor at the end, "
                        + finalRead + " (the cursor went down)"));
            }
            if (r.source() == ReadSource.READACK) {
                Long prev = lastAck.put(r.conv(), r.read());
                if (prev != null && r.read() < prev) {
                    out.add(new Violation(Kind.READ_REGRESSED, where + ": after a readack with read " + prev));
                }
            }
        }
    }

    /**
     * After quiesce: every online install's SDK {@code unread(conv)} equals the other online installs'
     * of its user and the count the log gives above the user's final read cursor.
     */
    static void checkFinalUnread(List<DeviceRecord> devices, Map<String, Map<Long, CommittedEvent>> bySeq,
                                 Map<String, Map<String, List<Period>>> periods,
                                 Map<String, Map<String, Long>> readCursors, List<Violation> out) {
        // user -> conv -> device -> SDK unread
        Map<String, Map<String, Map<String, Long>>> byUser = new TreeMap<>();
        for (DeviceRecord d : devices) {
            if (!d.online()) continue;
            nz(d.unread()).forEach((conv, n) -> byUser.computeIfAbsent(d.user(), k -> new TreeMap<>())
                    .computeIfAbsent(conv, k -> new TreeMap<>()).put(d.device(), n));
        }
        byUser.forEach((user, byConv) -> byConv.forEach((conv, byDevice) -> {
            long read = nz(readCursors.get(conv)).getOrDefault(user, 0L);
            List<Period> ps = nz(nz(periods.get(conv)).get(user));
            long expected = unreadFromLog(bySeq.getOrDefault(conv, Map.of()), ps, user, read, Checker.OPEN);
            List<String> wrong = new ArrayList<>();
            byDevice.forEach((device, n) -> {
                if (n != expected) wrong.add("device=" + device + " unread " + n);
            });
            if (!wrong.isEmpty()) {
                out.add(new Violation(Kind.UNREAD_DISAGREES, "conv=" + conv + " user=" + user + " seq=" + read + ": online "
                        + String.join(", ", wrong) + " at the end, of " + byDevice + "; the log has " + expected
                        + " visible message(s) of others above the read cursor " + read));
            }
        }));
    }

    /** Messages of users other than {@code user} visible to {@code user} with {@code read < seq <= head}. */
    static long unreadFromLog(Map<Long, CommittedEvent> log, List<Period> periods, String user, long read, long head) {
        TreeSet<Long> visible = DeviceChecks.visible(log.keySet(), periods);
        long n = 0;
        for (long seq : visible.subSet(read, false, head, true)) {
            CommittedEvent e = log.get(seq);
            if ("msg".equals(e.kind()) && !user.equals(e.sender())) n++;
        }
        return n;
    }
}
