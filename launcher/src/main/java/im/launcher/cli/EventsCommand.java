package im.launcher.cli;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.KafkaClients;
import im.infra.kafka.TopicNames;
import im.topics.EventRecord;
import im.topics.MalformedRecordException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.utils.Utils;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code im events}: the public event topic, as a data team sees it (docs/topics.md). */
@Command(name = "events", mixinStandardHelpOptions = true,
        description = "Read the public event topic <prefix>events from Kafka.",
        subcommands = EventsCommand.Tail.class)
public final class EventsCommand {

    /**
     * {@code im events tail}: a consumer without a group (it commits nothing and disturbs no one)
     * assigned every partition of {@code <prefix>events}, or only the partition of {@code --conv}.
     * Records are at-least-once: a duplicate (same conv and seq) is printed again, as a consumer
     * would see it.
     */
    @Command(name = "tail", mixinStandardHelpOptions = true,
            description = "Print records of <prefix>events (partition, offset, conv, seq, kind, sender, body) as they arrive.")
    static final class Tail implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--bootstrap", paramLabel = "HOST:PORT",
                description = "Kafka bootstrap servers (default: IM_KAFKA_BOOTSTRAP, else the embedded broker at 127.0.0.1:<IM_KAFKA_PORT>, i.e. 127.0.0.1:19092).")
        String bootstrap;

        @Option(names = "--topic-prefix", paramLabel = "PREFIX", description = "Topic prefix (default: IM_TOPIC_PREFIX, i.e. im.).")
        String prefix;

        @Option(names = "--from-beginning", description = "Start at the oldest retained record (default: only new records).")
        boolean fromBeginning;

        @Option(names = "--conv", paramLabel = "CONV", description = "Only this conversation (reads only its partition).")
        String conv;

        @Option(names = "--json", description = "Print each record's value (the JSON of docs/topics.md) as it is.")
        boolean json;

        @Option(names = {"-n", "--count"}, paramLabel = "N", description = "Stop after printing N records (default: follow until Ctrl-C).")
        Long count;

        @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "10",
                description = "How long to wait for Kafka's metadata (default: ${DEFAULT-VALUE}).")
        int timeoutSeconds;

        @Override
        public Integer call() {
            if (count != null && count < 1) throw new ParameterException(spec.commandLine(), "--count: must be at least 1");
            if (timeoutSeconds < 1) throw new ParameterException(spec.commandLine(), "--timeout: must be at least 1 second");
            Settings env = Settings.fromEnvironment();
            String servers = bootstrap != null ? bootstrap : env.optional(ConfigKeys.KAFKA_BOOTSTRAP)
                    .orElse("127.0.0.1:" + env.get(ConfigKeys.KAFKA_PORT));
            String topic;
            try {
                topic = new TopicNames(prefix != null ? prefix : env.string(ConfigKeys.TOPIC_PREFIX)).events();
            } catch (im.infra.config.ConfigException e) {
                throw new ParameterException(spec.commandLine(), "--topic-prefix: " + e.getMessage());
            }
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            err.println("connecting to Kafka at " + servers + " ...");
            err.flush();
            try (KafkaConsumer<String, String> consumer = KafkaClients.assignedConsumer(KafkaClientConfig.of(servers, env), Map.of(
                    ConsumerConfig.CLIENT_ID_CONFIG, "im-events-tail",
                    ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false"))) {
                List<PartitionInfo> infos;
                try {
                    infos = consumer.partitionsFor(topic, Duration.ofSeconds(timeoutSeconds));
                } catch (TimeoutException e) {
                    throw new CliException("cannot reach Kafka at " + servers + ": no metadata for " + topic
                            + " within " + timeoutSeconds + " s");
                }
                if (infos == null || infos.isEmpty()) {
                    throw new CliException("topic " + topic + " does not exist at " + servers
                            + " (is the platform running, and is the prefix right? --topic-prefix / IM_TOPIC_PREFIX)");
                }
                List<TopicPartition> parts = new ArrayList<>();
                if (conv != null) {   // the producers' default partitioner: murmur2 of the key
                    int n = infos.size();
                    parts.add(new TopicPartition(topic, Utils.toPositive(Utils.murmur2(conv.getBytes(StandardCharsets.UTF_8))) % n));
                } else {
                    for (PartitionInfo i : infos) parts.add(new TopicPartition(topic, i.partition()));
                }
                consumer.assign(parts);
                if (fromBeginning) consumer.seekToBeginning(parts);
                else consumer.seekToEnd(parts);
                for (TopicPartition tp : parts) consumer.position(tp, Duration.ofSeconds(timeoutSeconds));   // fix the start now
                err.println("following " + topic + " (" + (conv == null ? infos.size() + " partitions" : "conversation " + conv
                        + " on partition " + parts.get(0).partition()) + ") " + (fromBeginning ? "from the beginning" : "from now on"));
                err.flush();
                long printed = 0;
                try (StopHook ctrlC = new StopHook("im-events-stop", consumer::wakeup)) {
                    while (count == null || printed < count) {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                            if (conv != null && !conv.equals(r.key())) continue;
                            out.println(json ? r.value() : line(r));
                            printed++;
                            if (count != null && printed >= count) break;
                        }
                        out.flush();
                    }
                } catch (WakeupException stopped) {
                    // Ctrl-C
                }
                err.println("stopped after " + printed + " records");
                err.flush();
            } catch (TimeoutException e) {
                throw new CliException("Kafka at " + servers + " did not answer within " + timeoutSeconds + " s");
            } catch (KafkaException e) {
                throw new CliException("Kafka at " + servers + ": " + AdminClient.describe(e));
            }
            return 0;
        }

        /** {@code p3@17  c-ab #5  msg  u-ana  hello}; a value that is not the documented record is shown raw, with why. */
        static String line(ConsumerRecord<String, String> r) {
            String where = "p" + r.partition() + "@" + r.offset() + "  ";
            EventRecord v;
            try {
                v = EventRecord.read(r.value());
            } catch (MalformedRecordException e) {
                return where + r.key() + "  (not an event record: " + e.getMessage() + ") " + r.value();
            }
            return where + v.conv() + " #" + v.seq() + "  " + v.kind() + "  " + v.sender() + "  "
                    + Instant.ofEpochMilli(v.at()) + "  " + TailCommand.text(v.toWire());   // a bulk join: its count, not its list
        }
    }
}
