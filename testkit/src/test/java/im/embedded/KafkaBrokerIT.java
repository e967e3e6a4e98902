package im.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Topics;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaBrokerIT {

    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @TempDir
    Path tmp;

    @Test
    void embeddedBrokerCreatesTopicsIdempotentlyKeepsPerPartitionOrderAndReleasesPortsOnClose() throws Exception {
        Path dataDir = tmp.resolve("embedded");
        long t0 = System.nanoTime();
        EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(dataDir);
        System.out.printf("[timing] embedded broker ready in %d ms%n", ms(t0));
        int port;
        try (broker) {
            String bootstrap = broker.bootstrapServers();
            port = portOf(bootstrap);
            String topic = "orders";

            Topics.create(bootstrap, List.of(topic), 3);
            assertEquals(Map.of(topic, 3), Topics.describe(KafkaClientConfig.plain(bootstrap), List.of(topic, "absent")));

            // Sent values per partition, in offset order (as acknowledged).
            Map<Integer, List<String>> sent = new TreeMap<>();
            long t1 = System.nanoTime();
            try (KafkaProducer<String, String> producer = producer(bootstrap)) {
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    acks.add(producer.send(new ProducerRecord<>(topic, "conv-" + (i % 7), Integer.toString(i))));
                }
                Map<Integer, TreeMap<Long, String>> byOffset = new TreeMap<>();
                for (int i = 0; i < acks.size(); i++) {
                    RecordMetadata md = acks.get(i).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                    byOffset.computeIfAbsent(md.partition(), p -> new TreeMap<>()).put(md.offset(), Integer.toString(i));
                }
                byOffset.forEach((p, m) -> sent.put(p, new ArrayList<>(m.values())));
            }
            System.out.printf("[timing] embedded: 100 acks=all records produced in %d ms%n", ms(t1));
            assertEquals(3, sent.size(), "7 keys hash onto all 3 partitions");
            // Per key, send order must be kept within its partition (idempotent producer).
            sent.values().forEach(KafkaBrokerIT::assertAscendingPerKeyOrder);

            List<ConsumerRecord<String, String>> got = consumeFromBeginning(bootstrap, topic, 3, 100);
            Map<Integer, List<String>> consumed = new TreeMap<>();
            for (ConsumerRecord<String, String> r : got) {
                consumed.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(r.value());
            }
            assertEquals(sent, consumed, "each partition is read back in the order it was written");

            Topics.create(bootstrap, List.of(topic), 3); // same count: no-op
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> Topics.create(bootstrap, List.of(topic), 5));
            assertTrue(e.getMessage().contains(topic) && e.getMessage().contains("3") && e.getMessage().contains("5"),
                    e.getMessage());
        }
        assertPortFree(port);
        assertFalse(Files.exists(dataDir), "data dir deleted on close");
    }

    @Test
    void brokerProcessSurvivesKillMinus9AndRestartsOnTheSamePortWithItsData() throws Exception {
        Path dataDir = tmp.resolve("process");
        long t0 = System.nanoTime();
        try (KafkaBrokerProcess broker = KafkaBrokerProcess.start(dataDir, 0, true)) {
            System.out.printf("[timing] broker process ready in %d ms (pid %d)%n", ms(t0), broker.pid());
            String bootstrap = broker.bootstrapServers();
            String topic = "events";
            Topics.create(bootstrap, List.of(topic), 1);

            List<String> before = produce(bootstrap, topic, 0, 10);

            long pid = broker.pid();
            long tk = System.nanoTime();
            broker.kill();
            System.out.printf("[timing] kill -9 took %d ms%n", ms(tk));
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid + " is gone");
            assertFalse(broker.isAlive());

            long t1 = System.nanoTime();
            broker.restart();
            System.out.printf("[timing] broker process restarted after kill -9, ready in %d ms (pid %d)%n", ms(t1), broker.pid());
            assertNotEquals(pid, broker.pid());
            assertEquals(bootstrap, broker.bootstrapServers(), "same port after restart");

            assertEquals(before, values(consumeFromBeginning(bootstrap, topic, 1, 10)), "acked records survive kill -9");

            List<String> after = produce(bootstrap, topic, 10, 5);
            List<String> all = new ArrayList<>(before);
            all.addAll(after);
            assertEquals(all, values(consumeFromBeginning(bootstrap, topic, 1, 15)));

            long t2 = System.nanoTime();
            broker.close();
            System.out.printf("[timing] broker process SIGTERM stop took %d ms%n", ms(t2));
            assertFalse(ProcessHandle.of(broker.pid()).map(ProcessHandle::isAlive).orElse(false));
            assertTrue(Files.size(broker.logFile()) >= 0);
        }
    }

    // --- helpers -------------------------------------------------------------------------

    private static List<String> produce(String bootstrap, String topic, int from, int count) throws Exception {
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer(bootstrap)) {
            for (int i = from; i < from + count; i++) {
                String v = "v" + i;
                producer.send(new ProducerRecord<>(topic, "k", v)).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                values.add(v);
            }
        }
        return values;
    }

    private static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** Reads every partition from offset 0 until {@code expected} records arrived or the deadline passes. */
    private static List<ConsumerRecord<String, String>> consumeFromBeginning(String bootstrap, String topic,
                                                                            int partitions, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (out.size() < expected && System.nanoTime() < end) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        assertEquals(expected, out.size(), "records consumed from " + topic + " before the deadline");
        return out;
    }

    private static List<String> values(List<ConsumerRecord<String, String>> records) {
        return records.stream().map(ConsumerRecord::value).toList();
    }

    private static void assertAscendingPerKeyOrder(List<String> partitionValues) {
        Map<Integer, Integer> lastPerKey = new TreeMap<>();
        for (String v : partitionValues) {
            int i = Integer.parseInt(v);
            Integer last = lastPerKey.put(i % 7, i);
            assertTrue(last == null || last < i, "value " + i + " after " + last + " for key conv-" + (i % 7));
        }
    }

    private static void assertPortFree(int port) throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        }
    }

    private static int portOf(String bootstrap) {
        return Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
    }

    private static long ms(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }
}
