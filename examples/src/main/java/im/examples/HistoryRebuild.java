package im.examples;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Rebuilds conversation histories from the {@code <prefix>events} topic and verifies them
 * against PostgreSQL, the source of truth. Exit code 0: the topic holds exactly PostgreSQL's
 * events; 1: differences (each one is printed); 2: bad command line; 3: the check could not run.
 *
 * <p>How it works: (1) read the events from PostgreSQL; (2) capture the topic's end offsets and
 * read every partition from the beginning up to them, deduplicating by (conv, seq); (3) events
 * committed in PostgreSQL but not yet on the topic are waited for up to {@code --max-lag} (the
 * relay publishes a few ms after commit); (4) topic events above PostgreSQL's head of their
 * conversation are looked up again, since they may have been committed after step 1; (5)
 * compare. Everything is held in memory: for large histories, check one conversation at a time.
 */
@Command(name = "history-rebuild", mixinStandardHelpOptions = true, version = "history-rebuild (events schema v1)",
        sortOptions = false, exitCodeOnInvalidInput = HistoryRebuild.USAGE, exitCodeOnExecutionException = HistoryRebuild.FAILED,
        description = {
            "Rebuilds conversation histories from the <prefix>events topic (deduplicated by (conv, seq), "
                    + "gaps detected) and verifies them against the events table in PostgreSQL.",
            "Reads the topic from the beginning without a consumer group, up to the end offsets captured at start."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:the topic holds exactly PostgreSQL's events (a recalled message may keep its body on the topic)",
            "1:differences: missing, extra or mismatched events, conflicting duplicates or malformed records"
                    + " (a recalled message whose body the topic still has is not one)",
            "2:bad command line",
            "3:the check could not run (PostgreSQL or Kafka unreachable, topic absent, timeout, unknown conversation)"})
public final class HistoryRebuild implements Callable<Integer> {
    public static final int MATCH = 0;
    public static final int DIFFERENT = 1;
    public static final int USAGE = 2;
    public static final int FAILED = 3;

    private static final Pattern CONV_ID = Pattern.compile("[A-Za-z0-9._:-]{1,64}");

    @Spec
    private CommandSpec spec;

    @Option(names = "--bootstrap", defaultValue = "127.0.0.1:19092", paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (default: ${DEFAULT-VALUE}, the embedded stack).")
    private String bootstrap;

    @Option(names = "--kafka-config", paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, sasl.*, ssl.*), as the platform's IM_KAFKA_CONFIG_FILE.")
    private java.nio.file.Path kafkaConfig;

    @Option(names = "--topic-prefix", defaultValue = "im.", paramLabel = "PREFIX",
            description = "The platform's IM_TOPIC_PREFIX; the topic read is <prefix>events (default: ${DEFAULT-VALUE}).")
    private String topicPrefix;

    @Option(names = "--pg-url", defaultValue = "jdbc:postgresql://127.0.0.1:15432/im", paramLabel = "JDBC-URL",
            description = "PostgreSQL holding the events table (default: ${DEFAULT-VALUE}, the embedded stack).")
    private String pgUrl;

    @Option(names = "--pg-user", defaultValue = "postgres", paramLabel = "USER",
            description = "PostgreSQL user (default: ${DEFAULT-VALUE}).")
    private String pgUser;

    @Option(names = "--pg-password", defaultValue = "${env:PGPASSWORD:-postgres}", paramLabel = "PASSWORD",
            description = "PostgreSQL password (default: $PGPASSWORD, else postgres).")
    private String pgPassword;

    @Option(names = "--conv", paramLabel = "CONV",
            description = "Check only this conversation (reads only its partition). Default: every conversation.")
    private String conv;

    @Option(names = "--timeout", defaultValue = "60s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Longest time to read the topic up to its end offsets, e.g. 30s, 500ms, 2m (default: ${DEFAULT-VALUE}).")
    private Duration timeout;

    @Option(names = "--max-lag", defaultValue = "5s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long to keep reading for events that are in PostgreSQL but not yet on the topic "
                    + "before they count as missing (default: ${DEFAULT-VALUE}).")
    private Duration maxLag;

    @Option(names = "--max-report", defaultValue = "20", paramLabel = "N",
            description = "Detail lines printed per kind of difference (default: ${DEFAULT-VALUE}).")
    private int maxReport;

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The command line with the documented exit codes; tests run it with {@code execute}. */
    public static CommandLine commandLine() {
        return new CommandLine(new HistoryRebuild());
    }

    @Override
    public Integer call() {
        validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String topic = topicPrefix + "events";
        try {
            return check(topic, out);
        } catch (SQLException e) {
            err.println("error: PostgreSQL at " + pgUrl + ": " + e.getMessage());
        } catch (TimeoutException e) {
            err.println("error: " + topic + " on " + bootstrap + ": " + e.getMessage() + "; raise --timeout");
        } catch (KafkaException | IllegalStateException e) {
            err.println("error: Kafka at " + bootstrap + ": " + e.getMessage());
        } finally {
            out.flush();
        }
        return FAILED;
    }

    /** The properties of --kafka-config, none without it. */
    private java.util.Properties clientProperties() {
        java.util.Properties p = new java.util.Properties();
        if (kafkaConfig == null) return p;
        try (java.io.Reader r = java.nio.file.Files.newBufferedReader(kafkaConfig)) {
            p.load(r);
        } catch (java.io.IOException | IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--kafka-config: cannot read " + kafkaConfig + ": " + e.getMessage());
        }
        return p;
    }

    private void validate() {
        if (conv != null && !CONV_ID.matcher(conv).matches()) {
            throw new ParameterException(spec.commandLine(), "--conv: '" + conv + "' is not a conversation id ([A-Za-z0-9._:-]{1,64})");
        }
        if (!pgUrl.startsWith("jdbc:postgresql:")) {
            throw new ParameterException(spec.commandLine(), "--pg-url: must start with jdbc:postgresql:, got '" + pgUrl + "'");
        }
        if (maxReport < 0) {
            throw new ParameterException(spec.commandLine(), "--max-report: must be >= 0, was " + maxReport);
        }
    }

    private int check(String topic, PrintWriter out) throws SQLException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        DriverManager.setLoginTimeout((int) Math.max(1, Math.min(timeout.toSeconds(), 60)));
        try (Connection db = DriverManager.getConnection(pgUrl, pgUser, pgPassword);
             EventTopicReader reader = new EventTopicReader(bootstrap, clientProperties(), topic, conv, timeout)) {
            db.setReadOnly(true);
            // 1. PostgreSQL first: whatever it holds now is committed, so the relay owes it to the topic.
            Map<String, NavigableMap<Long, Event>> database = PostgresHistory.load(db, conv);
            out.printf("PostgreSQL %s: %d conversations, %d events%n", pgUrl, database.size(), count(database));

            // 2. The topic from the beginning up to the end offsets of now.
            TopicLog log = new TopicLog();
            out.printf("topic %s on %s: %d partitions, reading %s%n", topic, bootstrap, reader.partitionCount(),
                    conv == null ? "all" : "partition " + reader.partitions().get(0).partition() + " (conversation " + conv + ")");
            for (Map.Entry<TopicPartition, Long> t : reader.truncatedPartitions().entrySet()) {
                out.printf("WARNING partition %d starts at offset %d: retention deleted older records, "
                        + "so their events are reported missing%n", t.getKey().partition(), t.getValue());
            }
            reader.readToEnd(log, deadline);

            // 3. Give the relay time for what committed just before the end offsets were taken.
            long lagDeadline = System.nanoTime() + maxLag.toNanos();
            while (missingFromTopic(database, log) && System.nanoTime() < lagDeadline) {
                reader.poll(log, Duration.ofMillis(100));
            }

            // 4. Topic events above PostgreSQL's head may have committed after step 1: look again.
            Map<String, NavigableMap<Long, Event>> onTopic = log.events();
            for (Map.Entry<String, NavigableMap<Long, Event>> c : onTopic.entrySet()) {
                NavigableMap<Long, Event> known = database.computeIfAbsent(c.getKey(), k -> new TreeMap<>());
                long head = known.isEmpty() ? 0 : known.lastKey();
                long topicHead = c.getValue().lastKey();
                if (topicHead > head) {
                    // Only up to the topic's head: the relay publishes a conversation in commit order,
                    // so later rows are simply not published yet and are outside this check.
                    known.putAll(PostgresHistory.loadAfter(db, c.getKey(), head).headMap(topicHead, true));
                }
            }
            database.values().removeIf(Map::isEmpty);
            if (conv != null && database.isEmpty() && onTopic.isEmpty()) {
                out.flush();
                spec.commandLine().getErr().println("error: conversation " + conv
                        + " has no events in PostgreSQL and none on the topic (no such conversation?)");
                return FAILED;
            }

            // 5. Compare and report.
            return report(Comparison.of(onTopic, database), log, onTopic, database, out);
        }
    }

    private static boolean missingFromTopic(Map<String, NavigableMap<Long, Event>> database, TopicLog log) {
        for (NavigableMap<Long, Event> events : database.values()) {
            for (Event e : events.values()) {
                if (!log.contains(e.conv(), e.seq())) return true;
            }
        }
        return false;
    }

    private int report(Comparison cmp, TopicLog log, Map<String, NavigableMap<Long, Event>> onTopic,
                       Map<String, NavigableMap<Long, Event>> database, PrintWriter out) {
        List<TopicLog.Gap> gaps = log.gaps();
        // A record published after a recall emptied its row (a re-snapshot) differs from the original
        // in its body only: expected, not a conflict.
        List<TopicLog.Conflict> conflicts = log.conflicts().stream().filter(x -> !Comparison.emptiedByRecall(
                x.kept().event(), x.other().event(), x.fields(), database.getOrDefault(x.kept().event().conv(), new TreeMap<>())
                        .get(x.kept().event().seq()))).toList();
        out.printf("topic: %d records read, %d duplicates dropped (%d conflicting), %d malformed%n",
                log.records(), log.duplicates(), conflicts.size(), log.malformed().size());

        TreeSet<String> convs = new TreeSet<>(database.keySet());
        convs.addAll(onTopic.keySet());
        for (String c : convs) {
            NavigableMap<Long, Event> d = database.getOrDefault(c, new TreeMap<>());
            NavigableMap<Long, Event> t = onTopic.getOrDefault(c, new TreeMap<>());
            long missing = cmp.missing().stream().filter(e -> e.conv().equals(c)).count();
            long extra = cmp.extra().stream().filter(e -> e.conv().equals(c)).count();
            long mismatched = cmp.mismatched().stream().filter(m -> m.topic().conv().equals(c)).count();
            long conflicting = conflicts.stream().filter(x -> x.kept().event().conv().equals(c)).count();
            long recalled = cmp.recalled().stream().filter(r -> r.topic().conv().equals(c)).count();
            boolean ok = missing + extra + mismatched + conflicting == 0;
            out.printf("conversation %s: PostgreSQL %d events%s, topic %d events%s: %s%s%n", c, d.size(),
                    d.isEmpty() ? "" : " (head " + d.lastKey() + ")", t.size(),
                    t.isEmpty() ? "" : " (head " + t.lastKey() + ")",
                    ok ? "match" : missing + " missing, " + extra + " extra, " + mismatched + " mismatched, "
                            + conflicting + " conflicting duplicates",
                    recalled == 0 ? "" : " (" + recalled + " recalled)");
        }

        details(out, "MISSING", cmp.missing(), e -> e.conv() + " seq " + e.seq() + " (" + e.summary()
                + "): in PostgreSQL, not on the topic");
        details(out, "EXTRA", cmp.extra(), e -> e.conv() + " seq " + e.seq() + " (" + e.summary() + ", at "
                + log.positionOf(e.conv(), e.seq()) + "): on the topic, not in PostgreSQL");
        details(out, "MISMATCH", cmp.mismatched(), m -> m.topic().conv() + " seq " + m.topic().seq() + ": "
                + fields(m.fields(), f -> f + " " + m.topic().show(f) + " on the topic, " + m.database().show(f) + " in PostgreSQL"));
        details(out, "RECALLED", cmp.recalled(), r -> r.topic().conv() + " seq " + r.topic().seq() + " (by seq "
                + r.database().recalledBy() + "): body kept on the topic until retention");
        details(out, "CONFLICT", conflicts, x -> x.kept().event().conv() + " seq " + x.kept().event().seq()
                + ": the record at " + x.other().at() + " differs from the one at " + x.kept().at() + " in "
                + fields(x.fields(), f -> f + " (" + x.other().event().show(f) + " vs " + x.kept().event().show(f) + ")"));
        details(out, "MALFORMED", log.malformed(), m -> m.at() + " key " + Event.quote(m.key()) + ": " + m.reason());
        details(out, "GAP", gaps, g -> g.conv() + " seq " + (g.from() == g.to() ? g.from() + "" : g.from() + ".." + g.to())
                + " not on the topic");

        boolean match = cmp.matches() && conflicts.isEmpty() && log.malformed().isEmpty();
        int recalled = cmp.recalled().size();
        if (match) {
            out.printf("RESULT: MATCH: %d conversations, %d events, identical on the topic and in PostgreSQL%s%n",
                    convs.size(), count(database), recalled == 0 ? ""
                            : " but for " + recalled + " recalled, whose body the topic keeps until retention");
        } else {
            out.printf("RESULT: DIFFERENT: %d missing, %d extra, %d mismatched, %d conflicting duplicates, %d malformed, %d recalled%n",
                    cmp.missing().size(), cmp.extra().size(), cmp.mismatched().size(), conflicts.size(),
                    log.malformed().size(), recalled);
        }
        return match ? MATCH : DIFFERENT;
    }

    private <T> void details(PrintWriter out, String label, List<T> items, Function<T, String> line) {
        for (int i = 0; i < Math.min(items.size(), maxReport); i++) {
            out.printf("%-9s %s%n", label, line.apply(items.get(i)));
        }
        if (items.size() > maxReport) out.printf("%-9s ... and %d more%n", label, items.size() - maxReport);
    }

    private static String fields(List<String> names, Function<String, String> each) {
        return String.join("; ", names.stream().map(each).toList());
    }

    private static long count(Map<String, NavigableMap<Long, Event>> history) {
        return history.values().stream().mapToLong(Map::size).sum();
    }

    /** {@code 500ms}, {@code 30s}, {@code 2m}, or a bare number of seconds; above zero. */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        private static final Pattern FORMAT = Pattern.compile("(\\d{1,9})(ms|s|m)?");

        @Override
        public Duration convert(String value) {
            Matcher m = FORMAT.matcher(value.trim());
            if (!m.matches()) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a duration such as 500ms, 30s or 2m");
            }
            long n = Long.parseLong(m.group(1));
            String unit = m.group(2) == null ? "s" : m.group(2);
            Duration d = switch (unit) {
                case "ms" -> Duration.ofMillis(n);
                case "m" -> Duration.ofMinutes(n);
                default -> Duration.ofSeconds(n);
            };
            if (d.isZero()) throw new CommandLine.TypeConversionException("'" + value + "' must be above zero");
            return d;
        }
    }
}
