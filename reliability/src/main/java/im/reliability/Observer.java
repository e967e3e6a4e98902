package im.reliability;

import im.client.ImClient;
import im.client.api.PendingSend;
import im.client.api.ReceivedEvent;
import im.protocol.Event;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.KafkaClients;
import im.topics.EventRecord;
import im.topics.MalformedRecordException;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * What the campaign reads at the end (and while it waits to converge): whether anything still
 * lags, and the {@link History} the checker judges, from the devices' records and stores, the
 * database and the whole event topic.
 */
final class Observer {
    private final List<CastDevice> devices;
    private final List<String> convs;
    private final StackDb db;
    private final MembershipDriver membership;
    private final String bootstrap;
    private final String eventsTopic;
    private final List<String> problems;

    Observer(List<CastDevice> devices, List<String> convs, StackDb db, MembershipDriver membership, String bootstrap,
             String eventsTopic, List<String> problems) {
        this.devices = devices;
        this.convs = convs;
        this.db = db;
        this.membership = membership;
        this.bootstrap = bootstrap;
        this.eventsTopic = eventsTopic;
        this.problems = problems;
    }

    /** What still lags (empty when converged). */
    String lagging() {
        Map<String, Long> heads;
        Map<String, Set<String>> current = new HashMap<>();
        Map<String, Map<String, Long>> leftAt = new HashMap<>();   // user -> conv -> seq of the leave
        Map<String, Map<String, Long>> serverCursors = new HashMap<>();
        Map<String, Map<String, Long>> readCursors;
        try {
            heads = db.heads();
            // A wait condition only: the checker judges the cursors the devices were told, not this table.
            db.query("SELECT device_id, conv_id, delivered_seq FROM device_cursors",
                    rs -> serverCursors.computeIfAbsent(rs.getString(1), k -> new HashMap<>()).put(rs.getString(2), rs.getLong(3)));
            db.query("SELECT user_id, conv_id FROM memberships WHERE to_seq IS NULL",
                    rs -> current.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getString(2)));
            readCursors = readCursors();
            db.query("SELECT m.user_id, m.conv_id, m.to_seq FROM memberships m WHERE m.to_seq IS NOT NULL AND NOT EXISTS"
                    + " (SELECT 1 FROM memberships x WHERE x.conv_id = m.conv_id AND x.user_id = m.user_id AND x.from_seq > m.from_seq)",
                    rs -> leftAt.computeIfAbsent(rs.getString(1), k -> new HashMap<>()).put(rs.getString(2), rs.getLong(3)));
        } catch (SQLException e) {
            return "database: " + e.getMessage();
        }
        for (CastDevice d : devices) {
            if (d.parked) continue;
            if (!d.client.pending().isEmpty()) return d.id + " has " + d.client.pending().size() + " pending";
            for (String conv : current.getOrDefault(d.user, Set.of())) {
                long head = heads.get(conv);
                long local = d.client.cursor(conv);
                long srv = serverCursors.getOrDefault(d.id, Map.of()).getOrDefault(conv, -1L);
                if (local != head || srv != head) {
                    return d.id + " in " + conv + ": local " + local + ", server " + srv + ", head " + head;
                }
                // Also a wait condition only: a read on another device reaches this one by an unread push.
                long read = readCursors.getOrDefault(conv, Map.of()).getOrDefault(d.user, 0L);
                long sdkRead;
                try {
                    sdkRead = d.client.readStatus(conv).read();
                } catch (IOException e) {
                    return d.id + " in " + conv + ": read status: " + e.getMessage();
                }
                if (sdkRead != read) return d.id + " in " + conv + ": SDK read cursor " + sdkRead + ", read_cursors " + read;
            }
            // A conversation the user left: the device must still hold everything up to the leave.
            for (Map.Entry<String, Long> e : leftAt.getOrDefault(d.user, Map.of()).entrySet()) {
                long local = d.client.cursor(e.getKey());
                if (local < e.getValue()) return d.id + " in " + e.getKey() + " (left at " + e.getValue() + "): local " + local;
            }
        }
        return "";
    }

    History buildHistory() throws SQLException {
        List<History.SendRecord> sends = new ArrayList<>();
        for (CastDevice d : devices) {
            Set<String> pending = new HashSet<>();
            for (PendingSend p : d.client.pending()) pending.add(p.cmid());
            for (CastDevice.Attempt a : d.attempts) {
                List<History.SentReply> rs = List.copyOf(d.replies.getOrDefault(a.cmid(), List.of()));
                Set<String> pend = a.epoch() == d.epoch ? pending : d.install(a.epoch()).pending;
                History.Outcome out = !rs.isEmpty() ? History.Outcome.SENT
                        : pend.contains(a.cmid()) ? History.Outcome.PENDING : History.Outcome.REJECTED;
                sends.add(new History.SendRecord(d.id, d.user, a.conv(), a.cmid(), a.body(), out, rs, a.kind(), a.ref()));
            }
        }
        Map<String, List<History.CommittedEvent>> committed = new TreeMap<>();
        db.query("SELECT conv_id, seq, kind, mid::text, sender, cmid, body, users, coalesce(ref_seq, 0) FROM events"
                + " ORDER BY conv_id, seq", rs -> {
            java.sql.Array users = rs.getArray(8);
            committed.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(new History.CommittedEvent(
                    rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6),
                    rs.getString(7), users == null ? null : List.of((String[]) users.getArray()), rs.getLong(9)));
        });
        Map<String, Long> heads = db.heads();
        Map<String, Map<String, List<History.Period>>> visibility = new TreeMap<>();
        db.query("SELECT conv_id, user_id, from_seq, to_seq FROM memberships ORDER BY conv_id, user_id, from_seq", rs -> {
            long to = rs.getLong(4);
            if (rs.wasNull()) to = Long.MAX_VALUE;
            visibility.computeIfAbsent(rs.getString(1), k -> new TreeMap<>())
                    .computeIfAbsent(rs.getString(2), k -> new ArrayList<>()).add(new History.Period(rs.getLong(3), to));
        });
        Map<String, Map<String, Long>> finalServer = new HashMap<>();
        db.query("SELECT device_id, conv_id, delivered_seq FROM device_cursors", rs ->
                finalServer.computeIfAbsent(rs.getString(1), k -> new TreeMap<>()).put(rs.getString(2), rs.getLong(3)));
        Map<String, Map<String, Long>> readCursors = readCursors();
        List<History.DeviceRecord> devs = new ArrayList<>();
        for (CastDevice d : devices) {
            ImClient client = d.client;
            StoreSnapshot snap = StoreSnapshot.read(convs, client::cursor, client::events,
                    e -> e.getValue() > 0 || visibility.getOrDefault(e.getKey(), Map.of()).containsKey(d.user));
            CastDevice.Install rec = d.install(d.epoch);
            boolean online = client.isConnected();
            Map<String, Long> unread = new TreeMap<>();
            Map<String, Map<Long, String>> shown = new TreeMap<>();
            if (online) {
                for (String conv : convs) {
                    if (!visibility.getOrDefault(conv, Map.of()).containsKey(d.user)) continue;
                    try {
                        unread.put(conv, client.unread(conv));
                        shown.put(conv, shownTexts(client, conv));
                    } catch (IOException e) {
                        problems.add(d.id + " unread(" + conv + ") or eventsBefore failed: " + e);
                    }
                }
            }
            devs.add(new History.DeviceRecord(d.id, d.epoch, d.user, online, 0, snap.stored(), snap.local(),
                    finalServer.getOrDefault(d.id, Map.of()), List.copyOf(rec.seen), List.copyOf(rec.storedEvents),
                    List.copyOf(rec.cursorReports), d.client.pending().size(), List.copyOf(rec.readReports), unread,
                    snap.bodies(), shown));
            for (Map.Entry<Integer, CastDevice.Install> e : new TreeMap<>(d.installs).entrySet()) {
                if (e.getKey() == d.epoch) continue;
                CastDevice.Install old = e.getValue();
                devs.add(new History.DeviceRecord(d.id, e.getKey(), d.user, false, old.retiredAt, old.stored, old.local,
                        Map.of(), List.copyOf(old.seen), List.copyOf(old.storedEvents), List.copyOf(old.cursorReports), 0,
                        List.copyOf(old.readReports), Map.of(), old.bodies, Map.of()));
            }
        }
        List<History.TopicRecord> topic = readTopic(heads);
        return new History(sends, committed, heads, topic, visibility, List.copyOf(membership.ops), devs, readCursors);
    }

    /** What the SDK's local query shows for each stored message of {@code conv} ({@code text()}), paging from the latest. */
    private static Map<Long, String> shownTexts(ImClient client, String conv) throws IOException {
        Map<Long, String> shown = new TreeMap<>();
        long before = Long.MAX_VALUE;
        while (true) {
            List<ReceivedEvent> page = client.eventsBefore(conv, before, 1000);
            for (ReceivedEvent e : page) {
                if (Event.MSG.equals(e.kind())) shown.put(e.seq(), e.text() == null ? "" : e.text());
            }
            if (page.size() < 1000) return shown;
            before = page.get(0).seq();
        }
    }

    /** read_cursors per conversation, per user. */
    private Map<String, Map<String, Long>> readCursors() throws SQLException {
        Map<String, Map<String, Long>> m = new TreeMap<>();
        db.query("SELECT conv_id, user_id, read_seq FROM read_cursors",
                rs -> m.computeIfAbsent(rs.getString(1), k -> new TreeMap<>()).put(rs.getString(2), rs.getLong(3)));
        return m;
    }

    /** The whole event topic from the beginning, until it covers every head (or 60 s passed) and a poll comes back empty. */
    private List<History.TopicRecord> readTopic(Map<String, Long> heads) {
        List<History.TopicRecord> out = new ArrayList<>();
        Map<String, Long> max = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = KafkaClients.assignedConsumer(KafkaClientConfig.plain(bootstrap),   // the campaign's own embedded broker
                Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            String topic = eventsTopic;
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topic, Duration.ofSeconds(30)).forEach(i -> parts.add(new TopicPartition(topic, i.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    try {
                        EventRecord v = EventRecord.read(r.value());
                        out.add(new History.TopicRecord(v.conv(), v.seq()));
                        max.merge(v.conv(), v.seq(), Math::max);
                    } catch (MalformedRecordException e) {
                        problems.add("malformed topic record at " + r.partition() + "/" + r.offset() + ": " + e.getMessage());
                    }
                }
                boolean covered = heads.entrySet().stream().allMatch(e -> max.getOrDefault(e.getKey(), 0L) >= e.getValue());
                if (covered && records.isEmpty()) break;
            }
        }
        return out;
    }
}
