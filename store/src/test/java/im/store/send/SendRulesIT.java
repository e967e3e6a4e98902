package im.store.send;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.Period;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The send rules have one statement ({@link SendRules#decide}) and two SQL reads of the facts they
 * decide on: the per-send {@link SendSql#PRECHECK} and the batch's {@link SendSql#BATCH_LOCK} and
 * {@link SendSql#BATCH_PRECHECK}. For each case the test writes a state (the device's install and
 * credential, the sender's membership periods as {@link Period}s, an earlier send of the cmid),
 * computes the verdict the rules give for the facts it wrote, and asserts that a send through each
 * path ends that way: refused with the same code, a dup with the earlier seq, or accepted at the
 * head's next seq; and that only an accepted send writes.
 */
@ExtendWith(ImStackExtension.class)
class SendRulesIT {
    private static final long HEAD = 10;
    private static final long O = Period.OPEN;

    /** A state the send meets, and a name for the failure message. */
    private record Case(String name, boolean deviceExists, boolean reinstalled, boolean renewed, boolean convExists,
                        List<Period> periods, String earlierConv, String earlierBody) {
        Case member(List<Period> p) {
            return new Case(name, deviceExists, reinstalled, renewed, convExists, p, earlierConv, earlierBody);
        }
    }

    private static final List<Period> MEMBER = List.of(new Period(1, O));

    private static Case ok(String name) {
        return new Case(name, true, false, false, true, MEMBER, null, null);
    }

    private static Case earlier(String name, String conv, String body) {
        return new Case(name, true, false, false, true, MEMBER, conv, body);
    }

    private static final String BODY = "hello";

    /** Conversation names inside a case: the one it sends to, and another. */
    private static final String HERE = "here";
    private static final String ELSEWHERE = "elsewhere";

    private static final List<Case> CASES = List.of(
            ok("a member since the first event"),
            ok("a member since the head").member(List.of(new Period(HEAD, O))),
            ok("left, then rejoined").member(List.of(new Period(2, 4), new Period(7, O))),
            ok("joined and left").member(List.of(new Period(3, 6))),
            ok("left twice").member(List.of(new Period(2, 3), new Period(5, 8))),
            ok("never a member").member(List.of()),
            new Case("no such device", false, false, false, true, MEMBER, null, null),
            new Case("an install the device left behind", true, true, false, true, MEMBER, null, null),
            new Case("a token renewed since the session began", true, false, true, true, MEMBER, null, null),
            new Case("no such conversation", true, false, false, false, List.of(), null, null),
            earlier("the cmid sent before, same message", HERE, BODY),
            earlier("the cmid sent before, another body", HERE, "another"),
            earlier("the cmid sent before, another conversation", ELSEWHERE, BODY),
            new Case("the cmid sent before, and a stale install", true, true, false, true, MEMBER, HERE, BODY),
            new Case("the cmid sent before, the sender has left since", true, false, false, true,
                    List.of(new Period(1, 5)), HERE, BODY),
            new Case("the cmid sent before elsewhere, to a conversation that does not exist", true, false, false, false,
                    List.of(), ELSEWHERE, BODY));

    /** The earlier send's seq in its conversation. */
    private static final long EARLIER_SEQ = 4;

    @Test
    void bothPathsDecideEveryCaseAsTheRulesDo(TestStack stack) throws Exception {
        DataSource db = stack.dataSource();
        try (SendService alone = new SendService(db, Faults.none(), Clock.systemUTC(), 0, 1);
             SendService batched = new SendService(db, Faults.none(), Clock.systemUTC(), 1, 10)) {
            for (int i = 0; i < CASES.size(); i++) {
                Case k = CASES.get(i);
                check(db, k, "r" + i + "a", "per-send", req -> alone.send(req.who(), req.conv(), req.cmid(), req.body()));
                check(db, k, "r" + i + "b", "batch", req -> batched.sendAsOneBatch(List.of(req)).get(0).join());
            }
        }
    }

    private static void check(DataSource db, Case k, String id, String path, Function<SendService.Request, SendResult> send)
            throws Exception {
        String conv = "c-" + id;
        DevicePrincipal who = write(db, k, id, conv);
        SendService.Request req = new SendService.Request(who, conv, "cm", BODY);
        String at = k.name() + " (" + path + ")";
        // The facts the case wrote, decided by the rules: what the SQL reads must lead to the same verdict.
        SendRules.Facts facts = new SendRules.Facts(k.deviceExists() ? epochOf(k) : null, k.renewed() ? 1 : 0, who.userId(),
                k.convExists(), k.periods().stream().anyMatch(Period::open),
                k.earlierConv() == null ? null : new SendRules.Earlier(convOf(k.earlierConv(), conv), "msg", 0, k.earlierBody()));
        long events = count(db, "SELECT count(*) FROM events");
        SendRules.Verdict verdict;
        try {
            verdict = SendRules.decide(req, facts);
        } catch (SendRejectedException expected) {
            SendRejectedException e = assertThrows(SendRejectedException.class, () -> unwrap(send, req), at + ": refused");
            assertEquals(expected.errorCode(), e.errorCode(), at + ": the refusal");
            assertEquals(events, count(db, "SELECT count(*) FROM events"), at + ": a refusal writes nothing");
            return;
        }
        SendResult r = unwrap(send, req);
        if (verdict == SendRules.Verdict.DUP) {
            assertEquals(List.of(true, EARLIER_SEQ), List.of(r.dup(), r.seq()), at + ": a dup of the earlier send");
            assertEquals(events, count(db, "SELECT count(*) FROM events"), at + ": a dup writes nothing");
        } else {
            assertEquals(List.of(false, HEAD + 1), List.of(r.dup(), r.seq()), at + ": accepted at the next seq");
            assertEquals(HEAD + 1, count(db, "SELECT head_seq FROM conversations WHERE conv_id = '" + conv + "'"), at + ": the head");
        }
    }

    private static SendResult unwrap(Function<SendService.Request, SendResult> send, SendService.Request req) {
        try {
            return send.apply(req);
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw e;
        }
    }

    private static String convOf(String name, String conv) {
        return HERE.equals(name) ? conv : conv + "-" + ELSEWHERE;
    }

    /** Writes the case's state under ids ending in {@code id}; returns the session that sends. */
    private static DevicePrincipal write(DataSource db, Case k, String id, String conv) throws Exception {
        String user = "u-" + id;
        String device = "d-" + id;
        String other = convOf(ELSEWHERE, conv);
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO users (user_id) VALUES ('" + user + "')");
            if (k.deviceExists()) {
                st.execute("INSERT INTO devices (device_id, user_id, token_hash, install_epoch, credential) VALUES ('" + device + "', '"
                        + user + "', decode(md5('" + device + "'), 'hex'), " + epochOf(k) + ", " + (k.renewed() ? 1 : 0) + ")");
            }
            if (k.convExists()) st.execute("INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('" + conv + "', 'group', " + HEAD + ")");
            st.execute("INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('" + other + "', 'group', " + HEAD + ")");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO memberships (conv_id, user_id, from_seq, to_seq) VALUES (?, ?, ?, ?)")) {
                for (Period p : k.periods()) {
                    ps.setString(1, conv);
                    ps.setString(2, user);
                    ps.setLong(3, p.from());
                    ps.setObject(4, p.open() ? null : p.until());
                    ps.executeUpdate();
                }
            }
            if (k.earlierConv() != null) {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body)"
                        + " VALUES (?, ?, 'msg', gen_random_uuid(), ?, ?, 'cm', ?)")) {
                    ps.setString(1, convOf(k.earlierConv(), conv));
                    ps.setLong(2, EARLIER_SEQ);
                    ps.setString(3, user);
                    ps.setString(4, device);
                    ps.setString(5, k.earlierBody());
                    ps.executeUpdate();
                }
            }
        }
        // the session: install 1 with the token's first credential (the device may be at install 2 since)
        return new DevicePrincipal(user, device, 1, 0);
    }

    /** The device's install epoch in the database. */
    private static int epochOf(Case k) {
        return k.reinstalled() ? 2 : 1;
    }

    private static long count(DataSource db, String sql) throws Exception {
        try (Connection c = db.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
