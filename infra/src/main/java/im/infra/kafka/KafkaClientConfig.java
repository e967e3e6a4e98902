package im.infra.kafka;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;

/**
 * How this process's Kafka clients reach Kafka: the bootstrap servers ({@code IM_KAFKA_BOOTSTRAP})
 * and the client properties of {@code IM_KAFKA_CONFIG_FILE} (SASL, TLS, timeouts...), which every
 * client gets: producers, consumers and admin clients ({@link KafkaClients}), Kafka Streams, the
 * relay's Debezium offset store. The file is read and checked once per start, so a missing,
 * unreadable or malformed file, an unknown key or an invalid value stops the start with an error
 * naming the setting; a client's own settings are then laid over the file's (the platform's
 * latency and timeout choices win), and the keys on which the platform's guarantees rest
 * ({@link #REFUSED}) cannot be set in the file at all. {@link #toString()} hides secret values.
 *
 * @param bootstrap  {@code bootstrap.servers}
 * @param properties the file's properties (empty without a file), unmodifiable
 */
public record KafkaClientConfig(String bootstrap, Map<String, String> properties) {

    /**
     * Keys the file may not set: where the brokers are (IM_KAFKA_BOOTSTRAP says it), and what the
     * platform's delivery guarantees and wire format depend on.
     */
    static final Set<String> REFUSED = Set.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            ProducerConfig.ACKS_CONFIG, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, ProducerConfig.TRANSACTIONAL_ID_CONFIG,
            ConsumerConfig.GROUP_ID_CONFIG, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, ConsumerConfig.ISOLATION_LEVEL_CONFIG);

    private static final List<ConfigDef> CLIENT_DEFS =
            List.of(AdminClientConfig.configDef(), ProducerConfig.configDef(), ConsumerConfig.configDef());

    public KafkaClientConfig {
        Objects.requireNonNull(bootstrap, "bootstrap");
        properties = Map.copyOf(properties);
    }

    /** A broker that needs nothing but its address (the embedded broker, tests). */
    public static KafkaClientConfig plain(String bootstrap) {
        return new KafkaClientConfig(bootstrap, Map.of());
    }

    /**
     * IM_KAFKA_BOOTSTRAP with IM_KAFKA_CONFIG_FILE; empty when no bootstrap is set. The file is read
     * and checked even then, so a bad file fails every start that has it.
     *
     * @throws ConfigException naming IM_KAFKA_CONFIG_FILE if the file cannot be used
     */
    public static Optional<KafkaClientConfig> from(Settings s) {
        Map<String, String> file = fileProperties(s);
        return s.optional(ConfigKeys.KAFKA_BOOTSTRAP).map(b -> new KafkaClientConfig(b, file));
    }

    /** As {@link #from}, for a role that needs Kafka: IM_KAFKA_BOOTSTRAP is required. */
    public static KafkaClientConfig required(Settings s) {
        Map<String, String> file = fileProperties(s);
        return new KafkaClientConfig(s.required(ConfigKeys.KAFKA_BOOTSTRAP), file);
    }

    /** {@code bootstrap} (e.g. a broker this process started) with the file of {@code s}. */
    public static KafkaClientConfig of(String bootstrap, Settings s) {
        return new KafkaClientConfig(bootstrap, fileProperties(s));
    }

    private static Map<String, String> fileProperties(Settings s) {
        return s.optional(ConfigKeys.KAFKA_CONFIG_FILE).map(f -> load(Path.of(f))).orElse(Map.of());
    }

    /**
     * The properties of {@code file}, checked: every key must be a Kafka producer, consumer or
     * admin client setting (or {@code config.providers*}) and not one of {@link #REFUSED}; every
     * value must parse as its setting's type and pass its validator.
     *
     * @throws ConfigException naming IM_KAFKA_CONFIG_FILE and the file; never holding a value
     */
    static Map<String, String> load(Path file) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException e) {
            throw problem(file, "cannot read it (" + e.getClass().getSimpleName() + ": " + e.getMessage() + ")");
        } catch (IllegalArgumentException e) {   // a malformed \\uXXXX escape
            throw problem(file, "is not a Java properties file (" + e.getMessage() + ")");
        }
        Map<String, String> out = new TreeMap<>();
        for (String key : p.stringPropertyNames()) {
            String value = p.getProperty(key).trim();
            if (REFUSED.contains(key)) {
                throw problem(file, "sets " + key + ", which the platform sets itself"
                        + (key.equals(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) ? " from IM_KAFKA_BOOTSTRAP" : ""));
            }
            if (!key.startsWith("config.providers")) check(file, key, value);
            out.put(key, value);
        }
        return out;
    }

    private static void check(Path file, String key, String value) {
        ConfigDef.ConfigKey def = definition(key);
        if (def == null) {
            throw problem(file, "sets " + key + ", which is not a Kafka producer, consumer or admin client setting");
        }
        try {
            Object parsed = ConfigDef.parseType(key, value, def.type);
            if (def.validator != null) def.validator.ensureValid(key, parsed);
        } catch (org.apache.kafka.common.config.ConfigException e) {
            // Kafka's message may quote the value: name the key and type only.
            throw problem(file, key + " is not a valid " + def.type.toString().toLowerCase() + " for it"
                    + (isSecret(key) ? "" : " (" + e.getMessage() + ")"));
        }
    }

    private static ConfigDef.ConfigKey definition(String key) {
        for (ConfigDef d : CLIENT_DEFS) {
            ConfigDef.ConfigKey k = d.configKeys().get(key);
            if (k != null) return k;
        }
        return null;
    }

    /** A value never to print: Kafka's PASSWORD settings ({@code sasl.jaas.config}, {@code ssl.*password}...), or a name that says so. */
    static boolean isSecret(String key) {
        ConfigDef.ConfigKey def = definition(key);
        String k = key.toLowerCase();
        return (def != null && def.type == ConfigDef.Type.PASSWORD)
                || k.contains("password") || k.contains("secret") || k.contains("jaas") || k.endsWith(".key");
    }

    private static ConfigException problem(Path file, String what) {
        return new ConfigException(ConfigKeys.KAFKA_CONFIG_FILE.name(), file + " " + what);
    }

    /** A client's properties: the file's, then {@code bootstrap.servers}, then {@code own} over both. */
    public Map<String, Object> clientProperties(Map<String, ?> own) {
        Map<String, Object> p = new HashMap<>(properties);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.putAll(own);
        return p;
    }

    /** As {@link #clientProperties(Map)}, for APIs that take {@link Properties} (Kafka Streams, Debezium). */
    public Properties clientProperties(Properties own) {
        Properties p = new Properties();
        p.putAll(properties);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.putAll(own);
        return p;
    }

    /** The bootstrap and the file's keys; secret values as {@code [hidden]} (Kafka's own word). */
    @Override
    public String toString() {
        Map<String, String> shown = new TreeMap<>();
        properties.forEach((k, v) -> shown.put(k, isSecret(k) ? "[hidden]" : v));
        return "KafkaClientConfig[" + bootstrap + (shown.isEmpty() ? "" : " " + shown) + "]";
    }
}
