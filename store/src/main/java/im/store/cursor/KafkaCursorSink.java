package im.store.cursor;

import im.infra.db.DatabaseUnavailableException;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.KafkaClients;
import im.infra.kafka.TopicNames;
import im.topics.CursorRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes cursor records to {@code <prefix>cursors}, keyed by conversation, and waits for the
 * brokers' acknowledgement ({@code acks=all}, idempotent) of every record of a call, at most
 * {@link #TIMEOUT}. A call that fails or times out throws {@link DatabaseUnavailableException}
 * (the ack is answered {@code UNAVAILABLE} and its transaction rolls back), and the producer is
 * replaced before the next call, so one stuck after a broker restart is not reused.
 */
public final class KafkaCursorSink implements CursorSink {
    private static final Logger log = LoggerFactory.getLogger(KafkaCursorSink.class);
    /** The longest a publish may hold the cursor transaction (and its row locks) open. */
    public static final Duration TIMEOUT = Duration.ofSeconds(5);

    private final KafkaClientConfig kafka;
    private final Map<String, Object> settings;
    private final String topic;
    private KafkaProducer<String, String> producer;   // guarded by this; null until first use or after a failure

    public KafkaCursorSink(KafkaClientConfig kafka, TopicNames topics, String clientId) {
        this.kafka = kafka;
        this.topic = topics.cursors();
        long ms = TIMEOUT.toMillis();
        settings = Map.of(ProducerConfig.CLIENT_ID_CONFIG, clientId,
                ProducerConfig.LINGER_MS_CONFIG, "0",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(ms),
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(ms - 1000),
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(ms));
    }

    @Override
    public void publish(List<CursorRecord> records) {
        if (records.isEmpty()) return;
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        KafkaProducer<String, String> p = producer();
        try {
            List<Future<RecordMetadata>> sent = new ArrayList<>(records.size());
            for (CursorRecord r : records) sent.add(p.send(new ProducerRecord<>(topic, r.conv(), r.toJson())));
            for (Future<RecordMetadata> f : sent) f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw unavailable(p, e);
        } catch (ExecutionException e) {
            throw unavailable(p, e.getCause());
        } catch (TimeoutException | KafkaException e) {
            throw unavailable(p, e);
        }
    }

    private synchronized KafkaProducer<String, String> producer() {
        if (producer == null) producer = KafkaClients.durableProducer(kafka, settings);
        return producer;
    }

    private DatabaseUnavailableException unavailable(KafkaProducer<String, String> failed, Throwable cause) {
        synchronized (this) {
            if (producer == failed) producer = null;
        }
        failed.close(Duration.ZERO);
        log.warn("cursor records not acknowledged by Kafka within {} ms: {}", TIMEOUT.toMillis(), cause.toString());
        return new DatabaseUnavailableException("cursor records: Kafka did not acknowledge them", cause);
    }

    @Override
    public synchronized void close() {
        if (producer != null) producer.close(Duration.ofSeconds(5));
        producer = null;
    }
}
