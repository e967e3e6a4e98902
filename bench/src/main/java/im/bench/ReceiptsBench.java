package im.bench;

import im.embedded.EmbeddedPg;
import im.infra.db.Database;
import im.infra.identity.DevicePrincipal;
import im.protocol.Receipt;
import im.store.directory.Directory;
import im.store.read.MessageReceipts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What a receipts request costs (issue "Read state", docs/benchmarks.md "Read state"): one sender's
 * {@code receipts} of its last {@code --seqs} messages in a group of M members, M doubling, each
 * member with {@code --devices} devices whose delivered cursors, and a read cursor, sit at random
 * seqs of a log of {@code --messages} messages. The cost should grow with M (the request reads the
 * members' cursors once) and not with the seqs asked. The floor is the same statements
 * ({@link MessageReceipts}'s) through {@code pgbench}, one client, closed loop, on the same database.
 *
 * <pre>
 * CP="bench/target/classes:$(cat bench/target/cp.txt)"
 * java -cp "$CP" im.bench.ReceiptsBench --sizes 1000,2000,4000,8000
 * </pre>
 */
@Command(name = "receipts-bench", mixinStandardHelpOptions = true,
        description = "The cost of a receipts request as the group grows, against pgbench.")
public final class ReceiptsBench implements Callable<Integer> {
    private static final String CONV = "300000";
    private static final int USER_BASE = 100_000;

    @Option(names = "--sizes", split = ",", description = "members of the group, default ${DEFAULT-VALUE}")
    List<Integer> sizes = List.of(1000, 2000, 4000, 8000);

    @Option(names = "--devices", description = "devices per member, default ${DEFAULT-VALUE}")
    int devices = 2;

    @Option(names = "--messages", description = "messages of the sender in the log, default ${DEFAULT-VALUE}")
    int messages = 1000;

    @Option(names = "--seqs", description = "seqs asked per request (the sender's last), default ${DEFAULT-VALUE}")
    int seqs = 100;

    @Option(names = "--requests", description = "measured requests per size (after as many to warm up), default ${DEFAULT-VALUE}")
    int requests = 400;

    @Option(names = "--pgbench", description = "the pgbench binary, default ${DEFAULT-VALUE}")
    String pgbench = "/usr/bin/pgbench";

    @Option(names = "--pgbench-seconds", description = "seconds of the pgbench floor per size, default ${DEFAULT-VALUE}")
    int pgbenchSeconds = 10;

    /** The log's last seq once the fixtures are written: the sender's last message. */
    private long head;

    public static void main(String[] args) {
        System.exit(new CommandLine(new ReceiptsBench()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (!PgbenchFloor.available(pgbench)) {
            System.err.println(PgbenchFloor.missing(pgbench));
            return 2;
        }
        Path tmp = Files.createTempDirectory("im-receipts-bench-");
        System.out.printf("# receipts bench: groups of %s members with %d devices each, %d messages, %d seqs per request,"
                + " %d requests per size; load average before %s%n", sizes, devices, messages, seqs, requests, BenchEnv.loadAvg());
        System.out.printf("%-9s %14s %14s %15s %7s %16s%n", "members", "receipts p50 µs", "p99 µs", "pgbench avg µs", "ratio",
                "1 seq p50 µs");
        try (EmbeddedPg pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false)) {
            int run = 0;
            for (int m : sizes) {
                String dbName = "qb" + (run++);
                pg.createDatabase(dbName);
                try (Database db = Database.open(pg.dbConfig(dbName, 4), dbName)) {
                    Database.migrate(db.dataSource());
                    DevicePrincipal sender = fixtures(db, m);
                    MessageReceipts receipts = new MessageReceipts(db.dataSource());
                    List<Long> asked = LongStream.rangeClosed(head - seqs + 1, head).boxed().toList();
                    Histogram many = new Histogram(60_000_000L, 3);
                    Histogram one = new Histogram(60_000_000L, 3);
                    for (int i = 0; i < 2 * requests; i++) {
                        long t0 = System.nanoTime();
                        List<Receipt> r = receipts.receipts(sender, CONV, asked);
                        long t1 = System.nanoTime();
                        receipts.receipts(sender, CONV, List.of(head));
                        long t2 = System.nanoTime();
                        if (r.size() != seqs || r.get(0).members() != m - 1 || r.get(0).devices() != (long) (m - 1) * devices) {
                            throw new IllegalStateException("unexpected receipts " + r.get(0) + " for " + m + " members");
                        }
                        if (i >= requests) {
                            many.recordValue((t1 - t0) / 1000);
                            one.recordValue((t2 - t1) / 1000);
                        }
                    }
                    double floor = floor(pg, dbName, tmp, run, asked);
                    System.out.printf("%-9d %14d %14d %15.0f %7.2f %16d%n", m, many.getValueAtPercentile(50),
                            many.getValueAtPercentile(99), floor, many.getValueAtPercentile(50) / floor, one.getValueAtPercentile(50));
                }
            }
        } finally {
            BenchEnv.deleteTree(tmp);
        }
        System.out.printf("# load average after %s%n", BenchEnv.loadAvg());
        return 0;
    }

    /**
     * The group (member 0 the sender, with one device), its log of messages of the sender, and for
     * every other member {@code devices} devices with delivered cursors and a read cursor at random
     * seqs: written in SQL, as the platform would have them after a while.
     */
    private DevicePrincipal fixtures(Database db, int m) throws Exception {
        Directory dir = new Directory(db.dataSource(), Clock.systemUTC());
        String senderId = String.valueOf(USER_BASE);
        dir.createUser(senderId, "sender");
        DevicePrincipal sender = dir.authenticate(dir.registerDevice(senderId, "d" + USER_BASE).token());
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO users (user_id, display_name) SELECT (" + USER_BASE + " + i)::text, 'member ' || i"
                    + " FROM generate_series(1, " + (m - 1) + ") i");
            st.execute("INSERT INTO devices (device_id, user_id, install_epoch, token_hash)"
                    + " SELECT 'd' || u || '-' || k, u::text, 1, decode(md5(u || '-' || k), 'hex')"
                    + " FROM generate_series(" + (USER_BASE + 1) + ", " + (USER_BASE + m - 1) + ") u, generate_series(1, " + devices + ") k");
        }
        List<String> members = new ArrayList<>();
        for (int i = 0; i < m; i++) members.add(String.valueOf(USER_BASE + i));
        dir.createConversation(CONV, "group", members);   // bulk joins: seq 1, or one per 5,000 members
        long first;
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            var rs = st.executeQuery("SELECT head_seq FROM conversations WHERE conv_id = '" + CONV + "'");
            rs.next();
            first = rs.getLong(1) + 1;
            long last = first + messages - 1;
            head = last;
            st.execute("INSERT INTO events (conv_id, seq, kind, mid, sender, cmid, body, msg_no, own_no)"
                    + " SELECT '" + CONV + "', s, 'msg', gen_random_uuid(), '" + senderId + "', 'b' || s, 'x', s - " + first + " + 1,"
                    + " s - " + first + " + 1 FROM generate_series(" + first + ", " + last + ") s");
            st.execute("UPDATE conversations SET head_seq = " + last + " WHERE conv_id = '" + CONV + "'");
            st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq)"
                    + " SELECT d.device_id, '" + CONV + "', 1, " + first + " + (hashtext(d.device_id) & 2147483647) % " + messages
                    + " FROM devices d WHERE d.user_id <> '" + senderId + "'");
            st.execute("INSERT INTO read_cursors (user_id, conv_id, read_seq)"
                    + " SELECT u.user_id, '" + CONV + "', " + first + " + (hashtext(u.user_id) & 2147483647) % " + messages
                    + " FROM users u WHERE u.user_id <> '" + senderId + "'");
            st.execute("VACUUM ANALYZE");
        }
        return sender;
    }

    /** pgbench running MessageReceipts's statements for the same seqs: average latency, µs. */
    private double floor(EmbeddedPg pg, String dbName, Path tmp, int run, List<Long> asked) throws Exception {
        String array = "ARRAY[" + asked.stream().map(String::valueOf).collect(Collectors.joining(",")) + "]";
        String script = String.join("\n",
                "BEGIN;",
                PgbenchFloor.bind(MessageReceipts.OWN, "'" + CONV + "'", array, "'" + USER_BASE + "'") + ";",
                PgbenchFloor.bind(MessageReceipts.MEMBERS, "'" + CONV + "'", "'" + USER_BASE + "'", ":high", ":low") + ";",
                PgbenchFloor.bind(MessageReceipts.DEVICES, "'" + CONV + "'", "'" + USER_BASE + "'", ":high", ":low") + ";",
                "COMMIT;", "");
        return PgbenchFloor.averageLatencyMicros(pgbench, pg, dbName, Files.createDirectories(tmp.resolve("pgb-" + run)), script,
                pgbenchSeconds, "high=" + asked.get(asked.size() - 1), "low=" + asked.get(0));
    }
}
