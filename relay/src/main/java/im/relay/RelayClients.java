package im.relay;

import im.infra.kafka.TopicNames;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.postgresql.util.HostSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;

/** The settings of the relay's two clients: the Kafka producer and the Debezium engine. */
final class RelayClients {
    private RelayClients() {}

    /**
     * The relay's producer: acks=all, idempotent, stuck batches failed within seconds, and
     * transactional with one {@code transactional.id} per slot and topic prefix. Creating it
     * ({@code initTransactions}) fences every earlier producer of that id at the brokers: once a
     * standby that took the lock has its producer, whatever the previous holder still tries to
     * send (it was frozen between its lease check and its send, say) is refused by Kafka, not
     * only by the previous holder's own lease check.
     *
     * @throws org.apache.kafka.common.KafkaException if Kafka cannot be reached within max.block.ms
     */
    static KafkaProducer<String, String> producer(RelayConfig cfg, TopicNames topics) {
        Properties p = new Properties();
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1");
        // Fail a stuck batch in seconds, not the default 2 minutes: publishUntilAcknowledged then
        // re-sends it on a new producer (after a broker restart the old one can hang on a batch).
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "im-relay-" + cfg.slot());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(cfg, topics));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(cfg.kafka().clientProperties(p));
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            producer.close(java.time.Duration.ZERO);
            throw e;
        }
        return producer;
    }

    /** One id per slot and topic prefix: the relays that compete for a slot share it, others do not. */
    static String transactionalId(RelayConfig cfg, TopicNames topics) {
        return "im-relay-" + topics.prefix() + cfg.slot();
    }

    /**
     * Debezium Embedded (pgoutput) on the slot and publication of {@code cfg}, offsets in Kafka,
     * streaming from {@code server}: the server the lock session is on (Debezium takes one host;
     * with a multi-host IM_PG_URL that is the current primary).
     */
    /**
     * The tables in the publication: the event log, and the cursor resets of reinstalls. Cursor
     * changes are published by the cursor service; Debezium's "filtered" mode alters an existing
     * publication to this list on start, so a slot created with {@code device_cursors} in it stops
     * decoding cursor rows from that point of the WAL on.
     */
    static final String TABLES = "public.events,public.cursor_resets";

    static Properties engineProperties(RelayConfig cfg, TopicNames topics, HostSpec server) {
        Properties p = new Properties();
        p.put("name", "im-relay-" + cfg.slot());
        p.put("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.put("database.hostname", server.getHost());
        p.put("database.port", String.valueOf(server.getPort()));
        p.put("database.user", cfg.user());
        p.put("database.password", cfg.password());
        p.put("database.dbname", cfg.database());
        p.putAll(tlsProperties(cfg.pgUrl()));
        p.put("topic.prefix", "im-relay-" + cfg.slot());
        p.put("plugin.name", "pgoutput");
        p.put("slot.name", cfg.slot());
        p.put("slot.drop.on.stop", "false");
        // A PostgreSQL 17 failover slot: a standby with sync_replication_slots=on keeps a copy, so
        // after a promotion the relay resumes from it. Debezium ignores it before PostgreSQL 17.
        p.put("slot.failover", "true");
        p.put("publication.name", cfg.publication());
        p.put("publication.autocreate.mode", "filtered");
        p.put("table.include.list", TABLES);
        // First start: publish the rows that already exist, so the topic holds the whole history.
        p.put("snapshot.mode", "initial");
        p.put("tombstones.on.delete", "false");
        p.put("poll.interval.ms", String.valueOf(cfg.pollInterval().toMillis()));
        p.put("offset.storage", "org.apache.kafka.connect.storage.KafkaOffsetBackingStore");
        p.put("offset.storage.topic", topics.prefix() + "relay-offsets");
        p.put("offset.storage.partitions", "1");
        // The offsets are the relay's position in the WAL: replicated like the events they stand for.
        p.put("offset.storage.replication.factor", String.valueOf(cfg.replication().factor()));
        p.put("offset.flush.interval.ms", String.valueOf(cfg.offsetFlush().toMillis()));
        p.put("errors.max.retries", "-1");
        // The offset store's producer, consumer and admin client take the engine's top-level
        // properties: IM_KAFKA_CONFIG_FILE's security settings and the bootstrap go there.
        return cfg.kafka().clientProperties(p);
    }

    /** pgjdbc's TLS parameters and Debezium's names for them (its connections are built from these, not from the URL). */
    private static final Map<String, String> TLS_PARAMETERS = Map.of(
            "sslmode", "database.sslmode", "sslrootcert", "database.sslrootcert", "sslcert", "database.sslcert",
            "sslkey", "database.sslkey", "sslpassword", "database.sslpassword", "sslfactory", "database.sslfactory");

    /**
     * The TLS parameters of IM_PG_URL ({@code ?sslmode=verify-full&sslrootcert=...}) as Debezium
     * settings: Debezium connects (its JDBC and its replication connection) from
     * {@code database.*} settings, so without this the stream would not use the TLS the URL asks
     * for. pgjdbc's {@code ssl=true} without an sslmode means verify-full, as the driver reads it.
     */
    static Map<String, String> tlsProperties(String pgUrl) {
        Properties url = org.postgresql.Driver.parseURL(pgUrl, new Properties());
        if (url == null) throw new IllegalArgumentException("not a PostgreSQL JDBC URL");   // RelayConfig checked it
        Map<String, String> out = new TreeMap<>();
        TLS_PARAMETERS.forEach((param, setting) -> {
            String v = url.getProperty(param);
            if (v != null) out.put(setting, v);
        });
        if (!out.containsKey("database.sslmode") && "true".equalsIgnoreCase(url.getProperty("ssl"))) {
            out.put("database.sslmode", "verify-full");
        }
        return out;
    }
}
