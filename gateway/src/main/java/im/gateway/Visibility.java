package im.gateway;

import im.topics.Period;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What one connection may be written, per conversation: the latest visibility period of its user
 * as far as this gateway knows, from the {@code sub} snapshot and from the join/leave notices.
 * Each change carries the seq of the membership event behind it and only a later seq replaces it
 * ({@link Period#after}, the rule the delivery nodes fold the log with), so notices applied while
 * the {@code sub} read was in flight, or in any order relative to it, leave the period the log says. The gateway checks both bounds before writing any frame; the
 * delivery node has already routed by the same rule (defence in depth).
 */
final class Visibility {
    private final Map<String, Period> byConv = new HashMap<>();

    /** The user is a member since {@code seq} (a join event, or the join of the period {@code sub} read); true if that is news. */
    synchronized boolean joined(String conv, long seq) {
        Period p = byConv.get(conv);
        Period next = Period.joined(p, seq);
        if (next == p) return false;
        byConv.put(conv, next);
        return true;
    }

    /** The user left at {@code seq}: the leave itself is the last event they see. */
    synchronized void left(String conv, long seq) {
        byConv.put(conv, Period.left(byConv.get(conv), seq));
    }

    synchronized boolean visible(String conv, long seq) {
        Period p = byConv.get(conv);
        return p != null && p.covers(seq);
    }

    /** Whether the user is a member of {@code conv} now. */
    synchronized boolean member(String conv) {
        Period p = byConv.get(conv);
        return p != null && p.open();
    }

    /** Conversations the user is a member of now (their interest is registered). */
    synchronized Set<String> memberConvs() {
        Set<String> s = new TreeSet<>();
        byConv.forEach((c, p) -> {
            if (p.open()) s.add(c);
        });
        return s;
    }

    /** Every conversation this connection has known (withdrawn when it closes). */
    synchronized Set<String> allConvs() {
        return new TreeSet<>(byConv.keySet());
    }
}
