package im.bench;

import im.embedded.EmbeddedPg;
import im.infra.db.Database;
import im.store.directory.Directory;
import im.store.send.ConversationLog;
import im.store.send.SendSql;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;

/**
 * The send transaction's floor: exactly the statements of one send ({@link SendSql}, and {@link ConversationLog#NEXT_SEQ} for the seq), run by {@code pgbench}
 * (closed loop) against the same PostgreSQL as the platform. Its fixtures use ids that are digits
 * only, so that pgbench integer variables can carry them: pgbench client {@code i} is user
 * {@code 100000+i} with device {@code 200000+i}; conversation {@code j} is {@code 300000+j}, and its
 * members are the clients of group {@code j % groups}.
 */
final class PgbenchFloor {
    static final int USER_BASE = 100_000;
    static final int PGB_DEVICE_BASE = 200_000;
    static final int CONV_BASE = 300_000;

    /** One pgbench run: the transactions completed in the measured window and their latencies (µs). */
    record Result(String mode, Histogram latencyMicros, int seconds, double tps, double avgMs) {
        double rate() {
            return latencyMicros.getTotalCount() / (double) seconds;
        }
    }

    private final String pgbench;
    private final int clients;
    private final int conversations;
    private final int groups;

    PgbenchFloor(String pgbench, int clients, int conversations, int groups) {
        this.pgbench = pgbench;
        this.clients = clients;
        this.conversations = conversations;
        this.groups = groups;
    }

    /** True if the binary is there; the benches say how to install it otherwise. */
    static boolean available(String pgbench) {
        return Files.isExecutable(Path.of(pgbench));
    }

    static String missing(String pgbench) {
        return "pgbench not found at " + pgbench
                + ": install it (Debian/Ubuntu: apt-get install postgresql-client) or pass --pgbench PATH";
    }

    /** The users, the pgbench devices and the conversations (users that already exist are an error). */
    void fixtures(Directory dir, String what) {
        for (int i = 0; i < clients; i++) {
            String user = String.valueOf(USER_BASE + i);
            dir.createUser(user, what + " " + i);
            dir.registerDevice(user, String.valueOf(PGB_DEVICE_BASE + i));
        }
        for (int j = 0; j < conversations; j++) {
            List<String> members = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                if (i % groups == j % groups) members.add(String.valueOf(USER_BASE + i));
            }
            dir.createConversation(String.valueOf(CONV_BASE + j), "group", members);
        }
    }

    /**
     * The pgbench script: exactly the statements of one send ({@link SendSql}, and {@link ConversationLog#NEXT_SEQ} for the seq) in one transaction, {@code ?}
     * replaced in order by pgbench variables. The event id (a UUIDv7 made by the gateway in Java)
     * becomes a time-ordered UUID built in SQL, since pgbench variables are numbers.
     */
    static String script() {
        String mid = "(lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0')"
                + " || substr(gen_random_uuid()::text, 14))";
        return String.join("\n",
                "\\set grp :client_id % :groups",
                "\\set conv " + CONV_BASE + " + :grp + :groups * random(0, (:nconv - 1 - :grp) / :groups)",
                "\\set usr " + USER_BASE + " + :client_id",
                "\\set dev " + PGB_DEVICE_BASE + " + :client_id",
                "\\set cmid random(1, 9000000000000000000)",
                "BEGIN;",
                // conv, conv, cmid, device
                bind(SendSql.PRECHECK, ":conv", ":conv", ":cmid", ":dev") + ";",
                bind(ConversationLog.NEXT_SEQ, ":conv") + " \\gset",
                // conv, seq, mid, sender, device, cmid, body, conv, sender
                bind(SendSql.INSERT_MSG, ":conv", ":head_seq", mid, ":usr", ":dev", ":cmid", ":body", ":conv", ":usr") + ";",
                "COMMIT;",
                "");
    }

    /**
     * Runs {@code script} with one pgbench client for {@code seconds} ({@code -M prepared}) against
     * {@code dbName} of {@code pg}, with {@code defines} ({@code name=value}) as its variables; the
     * average latency of a transaction in µs.
     */
    static double averageLatencyMicros(String pgbench, EmbeddedPg pg, String dbName, Path dir, String script, int seconds,
                                       String... defines) throws Exception {
        Path file = dir.resolve("floor.sql");
        Files.writeString(file, script, StandardCharsets.UTF_8);
        var cfg = pg.dbConfig(dbName, 1);
        java.util.regex.Matcher port = java.util.regex.Pattern.compile(":(\\d+)/").matcher(cfg.jdbcUrl());
        if (!port.find()) throw new IllegalStateException("no port in " + cfg.jdbcUrl());
        List<String> cmd = new ArrayList<>(List.of(pgbench, "-n", "-h", "127.0.0.1", "-p", port.group(1), "-U", cfg.user(), "-c", "1",
                "-T", String.valueOf(seconds), "-M", "prepared", "-f", file.toString()));
        for (String d : defines) {
            cmd.add("-D");
            cmd.add(d);
        }
        cmd.add(dbName);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).directory(dir.toFile());
        pb.environment().put("PGPASSWORD", cfg.password());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0 || out.contains("aborted")) throw new IllegalStateException("pgbench failed:\n" + out);
        return find(out, "latency average = ([0-9.]+) ms").map(Double::parseDouble)
                .orElseThrow(() -> new IllegalStateException("no latency in pgbench's output:\n" + out)) * 1000;
    }

    /** Replaces each {@code ?} in order; the count must match exactly. */
    static String bind(String sql, String... vars) {
        StringBuilder out = new StringBuilder();
        int k = 0;
        for (int p = 0; p < sql.length(); p++) {
            char ch = sql.charAt(p);
            if (ch == '?') {
                if (k == vars.length) throw new IllegalStateException("more placeholders than variables in " + sql);
                out.append(vars[k++]);
            } else {
                out.append(ch);
            }
        }
        if (k != vars.length) throw new IllegalStateException(k + " placeholders, " + vars.length + " variables: " + sql);
        return out.toString();
    }

    /**
     * Runs pgbench for {@code warmup + seconds} with {@code -M protocol} against database
     * {@code dbName} on 127.0.0.1:{@code port}; measures the transactions that completed in the
     * last {@code seconds}. {@code onWarm} runs when the warm-up has passed (a CPU sample).
     */
    Result run(Database db, int port, String user, String password, String dbName, String body, String protocol,
               int warmup, int seconds, Path tmp, Runnable onWarm) throws Exception {
        String mode = "pgbench -M " + protocol;
        Path logDir = Files.createDirectories(tmp.resolve("pgb-" + protocol));
        Path script = logDir.resolve("send.sql");
        Files.writeString(script, script(), StandardCharsets.UTF_8);
        List<String> cmd = List.of(pgbench, "-n", "-h", "127.0.0.1", "-p", String.valueOf(port), "-U", user,
                "-c", String.valueOf(clients), "-j", String.valueOf(Math.min(2, clients)),
                "-T", String.valueOf(warmup + seconds), "-M", protocol, "-f", script.toString(),
                "-D", "nconv=" + conversations, "-D", "groups=" + groups, "-D", "body=" + body,
                "--log", "--log-prefix=" + logDir.resolve("tx"), dbName);
        long before = events(db);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).directory(logDir.toFile());
        pb.environment().put("PGPASSWORD", password);
        Process proc = pb.start();
        Thread warm = new Thread(() -> {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(warmup));
                onWarm.run();
            } catch (InterruptedException ignored) {
                // stopped
            }
        });
        warm.start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int rc = proc.waitFor();
        warm.join();
        long inserted = events(db) - before;
        long processed = find(out, "number of transactions actually processed: (\\d+)").map(Long::parseLong).orElse(-1L);
        double tps = find(out, "tps = ([0-9.]+) \\(without initial connection time\\)").map(Double::parseDouble).orElse(Double.NaN);
        double avg = find(out, "latency average = ([0-9.]+) ms").map(Double::parseDouble).orElse(Double.NaN);
        if (rc != 0 || processed <= 0 || out.contains("aborted")) {
            System.err.println("# pgbench failed (exit " + rc + "): " + String.join(" ", cmd) + "\n" + out);
            throw new IllegalStateException("pgbench failed");
        }
        if (inserted != processed) {
            // The INSERT's membership EXISTS would silently insert nothing: the floor would be wrong.
            throw new IllegalStateException("pgbench processed " + processed + " transactions but inserted " + inserted
                    + " events: the script's variables do not match the fixtures");
        }
        // Per-transaction log: client_id tx_no latency_us script_no epoch_s epoch_us. Measure the last
        // `seconds` seconds (completion time), after the warm-up, as the gateway modes do.
        List<long[]> tx = new ArrayList<>();
        try (Stream<Path> files = Files.list(logDir)) {
            for (Path f : files.filter(f -> f.getFileName().toString().startsWith("tx.")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    String[] p = line.trim().split("\\s+");
                    if (p.length < 6) continue;
                    tx.add(new long[] {Long.parseLong(p[2]), Long.parseLong(p[4]) * 1_000_000L + Long.parseLong(p[5])});
                }
            }
        }
        long last = tx.stream().mapToLong(t -> t[1]).max().orElseThrow();
        long from = last - TimeUnit.SECONDS.toMicros(seconds);
        Histogram h = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        tx.stream().filter(t -> t[1] > from).forEach(t -> h.recordValue(Math.max(1, t[0])));
        return new Result(mode, h, seconds, tps, avg);
    }

    /** Events written by pgbench clients (their devices are digits only; the platform's never are). */
    private static long events(Database db) throws SQLException {
        try (Connection c = db.connection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM events WHERE kind = 'msg' AND sender_device ~ '^[0-9]+$'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Optional<String> find(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        return m.find() ? Optional.of(m.group(1)) : Optional.empty();
    }
}
