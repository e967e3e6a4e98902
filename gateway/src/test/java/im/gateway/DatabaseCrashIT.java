package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ImErrorException;
import im.client.api.SentAck;
import im.embedded.EmbeddedPg;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.fault.Faults;
import im.protocol.ErrorCode;
import im.store.directory.Directory;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * D6 and the seed's "DB immediate stop": PostgreSQL is crashed ({@code pg_ctl -m immediate}) while
 * devices send, then restarted. Every acknowledged message still exists with its seq; requests in
 * flight get UNAVAILABLE or no reply, and succeed on resend with exactly one row each.
 * Uses its own PostgreSQL server so that no other test sees the crash.
 */
class DatabaseCrashIT {
    @Test
    void acknowledgedMessagesSurviveADatabaseCrash(@TempDir Path dir) throws Exception {
        try (EmbeddedPg pg = EmbeddedPg.start(dir.resolve("pg"), 0, true)) {   // kept: it must survive the crash
            pg.createDatabase("d6");
            Database db = Database.open(pg.dbConfig("d6", 8), "d6");
            Database.migrate(db.dataSource());
            Directory directory = new Directory(db.dataSource(), Clock.systemUTC());
            directory.createUser("u-ana", "");
            directory.createUser("u-bo", "");
            directory.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));
            List<String> tokens = new ArrayList<>();
            for (int i = 0; i < 4; i++) tokens.add(directory.registerDevice(i % 2 == 0 ? "u-ana" : "u-bo", "d" + i).token());
            Settings s = Settings.of(Map.of(
                    ConfigKeys.PG_URL.name(), pg.jdbcUrl("d6"),
                    ConfigKeys.GATEWAY_PORT.name(), "0",
                    ConfigKeys.ADMIN_PORT.name(), "0",
                    ConfigKeys.ADMIN_TOKEN.name(), Fixture.ADMIN_TOKEN));
            Gateway gw = Gateway.start(GatewayConfig.from(s), db.dataSource(), Faults.none(), Clock.systemUTC());
            URI ws = URI.create("ws://127.0.0.1:" + gw.port() + "/ws");

            // cmid -> seq, from every `sent` the SDK reported: the send's own return, and onSent, which also
            // reports a `sent` that came after its waiter gave up (a send queued behind the outage in its
            // lane can be committed after the client's timeout; the SDK then drops the outbox entry).
            Map<String, Long> acknowledged = new ConcurrentHashMap<>();
            List<Throwable> senderErrors = new java.util.concurrent.CopyOnWriteArrayList<>();
            AtomicInteger unavailable = new AtomicInteger();
            AtomicInteger noReply = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            List<ImClient> clients = new ArrayList<>();
            List<Thread> senders = new ArrayList<>();
            for (int i = 0; i < tokens.size(); i++) {
                ImClient c = ImClient.open(ClientOptions.of(ws, tokens.get(i), dir.resolve("dev" + i))
                        .withAutoReceive(false).withRequestTimeout(Duration.ofSeconds(5)));
                c.addListener(new ClientListener() {
                    @Override
                    public void onSent(SentAck a) {
                        confirm(acknowledged, a, senderErrors);
                    }
                });
                c.connect();
                clients.add(c);
                int id = i;
                Thread t = new Thread(() -> {
                    int k = 0;
                    while (!stop.get()) {
                        try {
                            confirm(acknowledged, c.send("c-ab", "device " + id + " message " + k++), senderErrors);
                        } catch (ImErrorException e) {
                            if (e.code() == ErrorCode.UNAVAILABLE) {
                                unavailable.incrementAndGet();
                            } else {
                                senderErrors.add(new AssertionError("unexpected error " + e.code(), e));
                                return;
                            }
                        } catch (IOException e) {
                            noReply.incrementAndGet();   // timeout or connection lost: the entry stays in the outbox
                        }
                    }
                }, "sender-" + i);
                t.start();
                senders.add(t);
            }
            Await.until(Duration.ofSeconds(60), () -> acknowledged.size() >= 60, "sends flowing before the crash");
            int beforeCrash = acknowledged.size();
            pg.crashImmediately();
            Await.until(Duration.ofSeconds(60), () -> unavailable.get() + noReply.get() >= 4, "requests failing while the database is down");
            pg.restartAfterCrash();
            Await.until(Duration.ofSeconds(60), () -> acknowledged.size() >= beforeCrash + 60, "sends flowing after the restart");
            stop.set(true);
            for (Thread t : senders) t.join(30_000);
            if (!senderErrors.isEmpty()) throw new AssertionError("a sender failed", senderErrors.get(0));

            // D6: every acknowledged message exists with the seq its sender was told.
            Map<String, Long> stored = rows(db);
            for (Map.Entry<String, Long> a : acknowledged.entrySet()) {
                assertEquals(a.getValue(), stored.get(a.getKey()), "acknowledged " + a.getKey() + " survived with its seq");
            }
            // In-flight ones succeed on resend, each exactly once.
            int pending = 0;
            for (ImClient c : clients) {
                pending += c.pending().size();
                for (SentAck a : c.resendPending()) confirm(acknowledged, a, senderErrors);
                assertTrue(c.pending().isEmpty(), "outbox empty after the resend");
            }
            stored = rows(db);
            // onSent runs on each client's callback thread, possibly just after the resend returned.
            Set<String> storedCmids = stored.keySet();
            Await.until(Duration.ofSeconds(10), () -> acknowledged.keySet().containsAll(storedCmids),
                    "every stored message reported sent to its client");
            for (ImClient c : clients) c.close();
            if (!senderErrors.isEmpty()) throw new AssertionError("a confirmation disagreed", senderErrors.get(0));
            assertEquals(acknowledged.keySet(), stored.keySet(), "every message once, nothing else");
            assertEquals(acknowledged, stored);
            Set<Long> seqs = new TreeSet<>(stored.values());
            assertEquals(stored.size(), seqs.size(), "no seq twice");
            assertEquals(3L, ((TreeSet<Long>) seqs).first());
            assertEquals(2L + stored.size(), ((TreeSet<Long>) seqs).last(), "no gap: crashed transactions consumed no seq");
            System.out.printf("database crash: %d acknowledged before the crash, %d UNAVAILABLE, %d without reply, "
                    + "%d resent from outboxes, %d messages in the end%n", beforeCrash, unavailable.get(), noReply.get(),
                    pending, stored.size());
            gw.close();
            db.close();
        }
    }

    /** Records a confirmation; a cmid confirmed twice must name the same seq (D2). */
    private static void confirm(Map<String, Long> acknowledged, SentAck a, List<Throwable> errors) {
        Long before = acknowledged.putIfAbsent(a.cmid(), a.seq());
        if (before != null && before != a.seq()) {
            errors.add(new AssertionError(a.cmid() + " confirmed with seq " + before + " and then " + a.seq()));
        }
    }

    private static Map<String, Long> rows(Database db) throws Exception {
        Map<String, Long> m = new java.util.HashMap<>();
        try (Connection c = db.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT cmid, seq FROM events WHERE kind = 'msg'");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) m.put(rs.getString(1), rs.getLong(2));
        }
        return m;
    }
}
