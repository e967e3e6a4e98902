package im.bench;

import im.embedded.EmbeddedPg;
import im.infra.db.Database;
import im.infra.identity.DevicePrincipal;
import im.store.cursor.CursorSink;
import im.store.cursor.ReadCursors;
import im.store.directory.Directory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What a read costs (issue "Read state", docs/benchmarks.md "Read state"): {@link ReadCursors#markRead}
 * in one group of {@code --members} members whose log holds N messages, N doubling; a read moves
 * one member's cursor to a random seq of the log, so the unread count it answers spans up to the
 * whole history. Its cost should stay flat as N doubles: the unread count's statement
 * ({@code ReadCursors.UNREAD}: running counts, four index probes per membership period; "unread SQL") is timed apart, beside
 * counting the messages above the cursor ("naive count", the same ranges), which grows with N. The floor is the same statements of one read through {@code pgbench}
 * (one client, closed loop) on the same database; and the sub's read states of a page of
 * {@code --page} conversations. Prints one row per N.
 *
 * <pre>
 * CP="bench/target/classes:$(cat bench/target/cp.txt)"
 * java -cp "$CP" im.bench.ReadBench --sizes 25000,50000,100000,200000
 * </pre>
 */
@Command(name = "read-bench", mixinStandardHelpOptions = true,
        description = "The cost of a read (read cursor + unread count) as the history grows, against pgbench and a naive count.")
public final class ReadBench implements Callable<Integer> {
    private static final String CONV = "300000";
    private static final int USER_BASE = 100_000;
    private static final int DEVICE_BASE = 200_000;

    @Option(names = "--sizes", split = ",", description = "messages in the group's log, default ${DEFAULT-VALUE}")
    List<Integer> sizes = List.of(25_000, 50_000, 100_000, 200_000);

    @Option(names = "--members", description = "members of the group, default ${DEFAULT-VALUE}")
    int members = 100;

    @Option(names = "--reads", description = "measured reads per size (after as many to warm up), default ${DEFAULT-VALUE}")
    int reads = 4000;

    @Option(names = "--page", description = "conversations of the sub page whose read states are read, default ${DEFAULT-VALUE}")
    int page = 500;

    @Option(names = "--pgbench", description = "the pgbench binary, default ${DEFAULT-VALUE}")
    String pgbench = "/usr/bin/pgbench";

    @Option(names = "--pgbench-seconds", description = "seconds of the pgbench floor per size, default ${DEFAULT-VALUE}")
    int pgbenchSeconds = 10;

    public static void main(String[] args) {
        System.exit(new CommandLine(new ReadBench()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (!PgbenchFloor.available(pgbench)) {
            System.err.println(PgbenchFloor.missing(pgbench));
            return 2;
        }
        Path tmp = Files.createTempDirectory("im-read-bench-");
        System.out.printf("# read bench: group of %d, sizes %s, %d reads per size, sub page of %d; load average before %s%n",
                members, sizes, reads, page, BenchEnv.loadAvg());
        System.out.printf("%-9s %12s %12s %15s %7s %17s %17s %17s%n", "N", "read p50 µs", "read p99 µs", "pgbench avg µs", "ratio",
                "unread SQL p50 µs", "naive count µs", "sub states/page ms");
        try (EmbeddedPg pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false)) {
            int run = 0;
            for (int n : sizes) {
                String dbName = "rb" + (run++);
                pg.createDatabase(dbName);
                try (Database db = Database.open(pg.dbConfig(dbName, 4), dbName)) {
                    Database.migrate(db.dataSource());
                    Directory dir = new Directory(db.dataSource(), Clock.systemUTC());
                    List<DevicePrincipal> who = fixtures(db, dir, n);
                    ReadCursors rc = new ReadCursors(db.dataSource(), CursorSink.NONE);
                    Random random = new Random(n);
                    Histogram read = new Histogram(60_000_000L, 3);
                    Histogram naive = new Histogram(60_000_000L, 3);
                    Histogram counts = new Histogram(60_000_000L, 3);
                    long head = n + 1;   // the bulk join, then n messages
                    try (Connection c = db.dataSource().getConnection();
                         PreparedStatement byCounts = c.prepareStatement(ReadCursors.UNREAD);
                         PreparedStatement count = c.prepareStatement("SELECT count(*) FROM events WHERE conv_id = ? AND seq > ?"
                                 + " AND seq <= ? AND kind = 'msg' AND sender <> ?")) {
                        for (int i = 0; i < 2 * reads; i++) {
                            DevicePrincipal d = who.get(random.nextInt(who.size()));
                            long seq = 1 + (long) (random.nextDouble() * head);
                            long t0 = System.nanoTime();
                            ReadCursors.Marked m = rc.markRead(d, CONV, seq);
                            long t1 = System.nanoTime();
                            count.setString(1, CONV);
                            count.setLong(2, m.state().read());
                            count.setLong(3, head);
                            count.setString(4, d.userId());
                            long naiveCount;
                            try (ResultSet rs = count.executeQuery()) {
                                rs.next();
                                naiveCount = rs.getLong(1);
                            }
                            long t2 = System.nanoTime();
                            byCounts.setArray(1, c.createArrayOf("text", new Object[] {CONV}));
                            byCounts.setArray(2, c.createArrayOf("text", new Object[] {d.userId()}));
                            byCounts.setArray(3, c.createArrayOf("int8", new Object[] {m.state().read()}));
                            byCounts.setArray(4, c.createArrayOf("int8", new Object[] {head}));
                            try (ResultSet rs = byCounts.executeQuery()) {
                                rs.next();
                            }
                            long t3 = System.nanoTime();
                            if (naiveCount != m.state().unread()) {
                                throw new IllegalStateException("unread " + m.state() + " but the count says " + naiveCount);
                            }
                            if (i >= reads) {
                                read.recordValue((t1 - t0) / 1000);
                                naive.recordValue((t2 - t1) / 1000);
                                counts.recordValue((t3 - t2) / 1000);
                            }
                            if (i % 500 == 0) resetCursors(c);   // keep reads moving the cursors
                        }
                    }
                    double floor = floor(pg, dbName, tmp, run);
                    double states = states(db, dir, n);
                    System.out.printf("%-9d %12d %12d %15.0f %7.2f %17d %17d %17.1f%n", n, read.getValueAtPercentile(50),
                            read.getValueAtPercentile(99), floor, read.getValueAtPercentile(50) / floor,
                            counts.getValueAtPercentile(50), naive.getValueAtPercentile(50), states);
                }
            }
        } finally {
            BenchEnv.deleteTree(tmp);
        }
        System.out.printf("# load average after %s%n", BenchEnv.loadAvg());
        return 0;
    }

    /** Members with a device each, the group (one bulk join), and n messages of random members with their running counts. */
    private List<DevicePrincipal> fixtures(Database db, Directory dir, int n) throws Exception {
        List<String> users = new ArrayList<>();
        List<DevicePrincipal> who = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            String u = String.valueOf(USER_BASE + i);
            dir.createUser(u, "member " + i);
            who.add(dir.authenticate(dir.registerDevice(u, String.valueOf(DEVICE_BASE + i)).token()));
            users.add(u);
        }
        dir.createConversation(CONV, "group", users);
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            // The history as the send path writes it: seq 2.., msg_no and own_no the running counts (as migration V9 fills them).
            st.execute("INSERT INTO events (conv_id, seq, kind, mid, sender, cmid, body, msg_no, own_no)"
                    + " SELECT '" + CONV + "', s, 'msg', gen_random_uuid(), x.sender, 'b' || s, repeat('x', 100), s - 1,"
                    + "   row_number() OVER (PARTITION BY x.sender ORDER BY s)"
                    + " FROM (SELECT s, (" + USER_BASE + " + (hashint4(s) & 2147483647) % " + members + ")::text AS sender"
                    + "   FROM generate_series(2, " + (n + 1) + ") s) x");
            st.execute("UPDATE conversations SET head_seq = " + (n + 1) + " WHERE conv_id = '" + CONV + "'");
            st.execute("VACUUM ANALYZE events");
        }
        return who;
    }

    private static void resetCursors(Connection c) throws Exception {
        try (Statement st = c.createStatement()) {
            st.execute("DELETE FROM read_cursors");
        }
    }

    /** pgbench running the statements of one read (CHECK, UPSERT, the unread count) in one transaction: average latency, µs. */
    private double floor(EmbeddedPg pg, String dbName, Path tmp, int run) throws Exception {
        String script = String.join("\n",
                "\\set member random(0, " + (members - 1) + ")",
                "\\set dev " + DEVICE_BASE + " + :member",
                "\\set usr " + USER_BASE + " + :member",
                "\\set seq random(1, :head)",
                "\\set conv " + CONV,
                "BEGIN;",
                // a batch of one read, as the gateway writes a read alone (ids are digits only, so pgbench's integer variables carry them)
                PgbenchFloor.bind(ReadCursors.CHECK, "ARRAY[:dev::text]", "ARRAY[:dev::text]", "ARRAY[:conv::text]") + ";",
                PgbenchFloor.bind(ReadCursors.UPSERT, "ARRAY[:usr::text]", "ARRAY[:conv::text]", "ARRAY[:seq::bigint]") + ";",
                PgbenchFloor.bind(ReadCursors.UNREAD, "ARRAY[:conv::text]", "ARRAY[:usr::text]", "ARRAY[:seq::bigint]", "ARRAY[:head::bigint]") + ";",
                "COMMIT;", "");
        long head;
        try (Database db = Database.open(pg.dbConfig(dbName, 1), "floor"); Connection c = db.dataSource().getConnection();
             Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT head_seq FROM conversations WHERE conv_id = '" + CONV + "'")) {
            rs.next();
            head = rs.getLong(1);
        }
        return PgbenchFloor.averageLatencyMicros(pgbench, pg, dbName, Files.createDirectories(tmp.resolve("pgb-" + run)), script,
                pgbenchSeconds, "head=" + head);
    }

    /** The sub's read states of one member in a page of conversations (each of 2 members and a few messages): ms per page, median of 20. */
    private double states(Database db, Directory dir, int n) throws Exception {
        String me = String.valueOf(USER_BASE);
        String other = String.valueOf(USER_BASE + 1);
        List<String> convs = new ArrayList<>();
        for (int i = 0; i < page; i++) {
            String conv = "page" + n + "-" + i;
            dir.createConversation(conv, "direct", List.of(me, other));
            convs.add(conv);
        }
        ReadCursors rc = new ReadCursors(db.dataSource(), CursorSink.NONE);
        Histogram h = new Histogram(60_000_000L, 3);
        for (int i = 0; i < 40; i++) {
            long t0 = System.nanoTime();
            int got = rc.states(me, convs).size();
            if (got != page) throw new IllegalStateException(got + " states for " + page + " conversations");
            if (i >= 20) h.recordValue((System.nanoTime() - t0) / 1000);
        }
        return h.getValueAtPercentile(50) / 1000.0;
    }
}
