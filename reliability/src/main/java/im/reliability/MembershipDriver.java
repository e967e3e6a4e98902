package im.reliability;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The campaign's membership changes through the admin API, and what the campaign believes about
 * membership (which the senders follow when they choose a conversation): the planned leave/join
 * changes of a run and the nemesis' churn of online users. Every change is recorded with the seq
 * of its join/leave event for the checker.
 */
final class MembershipDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** user -> conversations it is currently a member of (as far as the campaign knows). */
    final Map<String, Set<String>> memberOf = new ConcurrentHashMap<>();
    final Set<String> groupConvs = new LinkedHashSet<>();
    /** Every membership change the campaign made, with the seq it was answered. */
    final List<History.MembershipOp> ops = new CopyOnWriteArrayList<>();
    /** Changes attempted (planned and churn). */
    final AtomicLong done = new AtomicLong();
    private final AdminHttp admin;
    private final StackDb db;

    MembershipDriver(AdminHttp admin, StackDb db) {
        this.admin = admin;
        this.db = db;
    }

    /** Leaves and (re)joins in groups at evenly spread times; the senders' choice follows. */
    void churn(int changes, long runStart, long runEnd, Random r, BooleanSupplier stop) {
        if (changes <= 0 || groupConvs.isEmpty()) return;
        long step = (runEnd - runStart) / (changes + 1);
        List<String> groups = new ArrayList<>(groupConvs);
        List<String> users = new ArrayList<>(new java.util.TreeSet<>(memberOf.keySet()));
        users.removeIf(u -> u.startsWith("u-probe"));
        for (int i = 1; i <= changes && !stop.getAsBoolean(); i++) {
            long at = runStart + i * step;
            long now = System.currentTimeMillis();
            if (at > now) LockSupport.parkNanos((at - now) * 1_000_000L);
            String g = groups.get(r.nextInt(groups.size()));
            String u = users.get(r.nextInt(users.size()));
            boolean member = memberOf.get(u).contains(g);
            try {
                if (member) {
                    long inGroup = memberOf.values().stream().filter(s -> s.contains(g)).count();
                    if (inGroup <= 2) continue;
                    memberOf.get(u).remove(g);   // stop choosing it first: fewer sends rejected as NOT_MEMBER
                    member(g, u, false);
                    Campaign.log("membership: %s left %s", u, g);
                } else {
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    Campaign.log("membership: %s joined %s", u, g);
                }
                done.incrementAndGet();
            } catch (RuntimeException e) {   // e.g. PostgreSQL is down right now: the change may or may not have happened
                Campaign.log("membership change %s %s failed: %s", u, g, e);
                resync();
            }
        }
    }

    /**
     * A membership change through the admin API ({@code PUT}/{@code DELETE
     * /admin/conversations/{conv}/members/{user}}), as an operator makes it: on gateway 0, or gateway 1
     * when gateway 0 is down. Records the operation with the seq of its join/leave event.
     *
     * @throws IllegalStateException if neither gateway answered 200 (the change may or may not have happened)
     */
    void member(String conv, String user, boolean add) {
        String failure = "";
        for (int gw = 0; gw < Stack.GATEWAYS; gw++) {
            try {
                var resp = admin.send(gw, add ? "PUT" : "DELETE", "/admin/conversations/" + conv + "/members/" + user,
                        Duration.ofSeconds(5));
                if (resp.statusCode() == 200) {
                    JsonNode r = JSON.readTree(resp.body());
                    ops.add(new History.MembershipOp(conv, user, r.get("event").asText(), r.get("seq").asLong(),
                            r.get("changed").asBoolean()));
                    return;
                }
                failure += " gateway" + gw + ": " + resp.statusCode() + " " + resp.body();
            } catch (IOException e) {
                failure += " gateway" + gw + ": " + e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted");
            }
        }
        throw new IllegalStateException((add ? "PUT " : "DELETE ") + conv + "/" + user + " failed:" + failure);
    }

    /**
     * The nemesis' membership churn of an online user, in one of three shapes: leave and rejoin
     * after a moment, a back-to-back leave+join, or a removal while the user keeps sending into the
     * conversation (its sends get NOT_MEMBER until the rejoin). Returns what it did.
     */
    String churnOnce(int shape) {
        List<String> groups = new ArrayList<>(groupConvs);
        if (groups.isEmpty()) return "no groups";
        Random r = new Random(shape * 31L + ops.size());
        String g = groups.get(r.nextInt(groups.size()));
        List<String> in = new ArrayList<>(new java.util.TreeSet<>(memberOf.entrySet().stream()
                .filter(e -> e.getValue().contains(g) && !e.getKey().startsWith("u-probe")).map(Map.Entry::getKey).toList()));
        if (in.size() <= 2) return g + " too small";
        String u = in.get(r.nextInt(in.size()));
        try {
            switch (shape % 3) {
                case 0 -> {
                    memberOf.get(u).remove(g);
                    member(g, u, false);
                    LockSupport.parkNanos(1_500_000_000L);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " left " + g + " and rejoined 1.5 s later";
                }
                case 1 -> {
                    memberOf.get(u).remove(g);
                    member(g, u, false);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " left and rejoined " + g + " back to back";
                }
                default -> {
                    // Removed while it sends: the senders keep choosing g for u, so some sends race the removal.
                    member(g, u, false);
                    LockSupport.parkNanos(1_000_000_000L);
                    memberOf.get(u).remove(g);
                    LockSupport.parkNanos(500_000_000L);
                    member(g, u, true);
                    memberOf.get(u).add(g);
                    return u + " removed from " + g + " while sending, rejoined";
                }
            }
        } catch (RuntimeException e) {
            resync();
            return u + " " + g + " failed: " + e;
        } finally {
            done.incrementAndGet();
        }
    }

    void resync() {
        try {
            Map<String, Set<String>> now = new HashMap<>();
            db.query("SELECT user_id, conv_id FROM memberships WHERE to_seq IS NULL", rs -> {
                now.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getString(2));
            });
            for (Map.Entry<String, Set<String>> e : memberOf.entrySet()) {
                Set<String> want = now.getOrDefault(e.getKey(), Set.of());
                e.getValue().retainAll(want);
                e.getValue().addAll(want);
            }
        } catch (SQLException e) {
            Campaign.log("cannot re-read memberships: %s", e);
        }
    }

}
