package im.bench;

import im.infra.kafka.Topics;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's own produce→consume latency on the broker under test, one message at a time, the
 * equivalent of {@code org.apache.kafka.tools.EndToEndLatency} (acks=all, one partition, a
 * consumer assigned to it) but in microseconds instead of whole milliseconds: the clock starts
 * before {@code send} and stops when {@code poll} returns the record. With
 * {@code fetch.max.wait.ms=0} the consumer busy-polls (as the tool does: the lowest latency, a
 * core of CPU); with 50 ms it long-polls as the delivery node and the gateway do (the broker answers
 * the waiting fetch as soon as the record is appended).
 */
final class KafkaFloor {
    private KafkaFloor() {
    }

    static Histogram measure(String bootstrap, String topic, int messages, int bodyBytes, int fetchMaxWaitMs) throws Exception {
        Topics.create(bootstrap, List.of(topic), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, String.valueOf(fetchMaxWaitMs));
        cp.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, "1");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        byte[] payload = SendBench.body(bodyBytes).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Histogram h = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        int warm = Math.min(100, Math.max(10, messages / 10));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            consumer.assign(List.of(tp));
            consumer.seekToEnd(List.of(tp));
            consumer.position(tp);
            for (int i = 0; i < warm + messages; i++) {
                long t0 = System.nanoTime();
                Future<RecordMetadata> ack = producer.send(new ProducerRecord<>(topic, 0, null, payload));
                int got = 0;
                long deadline = t0 + TimeUnit.SECONDS.toNanos(10);
                while (got == 0) {
                    ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                    got = recs.count();
                    if (got == 0 && System.nanoTime() > deadline) throw new IllegalStateException("floor: message " + i + " not consumed in 10 s");
                }
                long t1 = System.nanoTime();
                ack.get(10, TimeUnit.SECONDS);
                if (got != 1) throw new IllegalStateException("floor: expected one record, got " + got);
                if (i >= warm) h.recordValue(Math.max(1, (t1 - t0) / 1000));
            }
        }
        return h;
    }
}
