package im.infra.kafka;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.util.List;
import java.util.Map;

/**
 * The one place that knows every topic the roles share, its partition count and replication: the
 * conversation-keyed topics with IM_PARTITIONS partitions (co-partitioned), the others with one.
 * Every way of starting roles calls this before starting them; a gateway's own channel topic is
 * created by that gateway, as it belongs to that instance.
 */
public final class SharedTopics {
    /** How long the typing topic keeps its records: they are of no use after a few seconds. */
    public static final long TYPING_RETENTION_MS = 60_000;

    private SharedTopics() {
    }

    /**
     * Creates the shared topics named by IM_TOPIC_PREFIX with IM_PARTITIONS partitions, replicated
     * as IM_REPLICATION_FACTOR says (idempotent), on {@code bootstrap} with the client settings of
     * IM_KAFKA_CONFIG_FILE.
     */
    public static void create(String bootstrap, Settings s) {
        create(KafkaClientConfig.of(bootstrap, s), TopicNames.from(s), s.get(ConfigKeys.PARTITIONS), Replication.from(s));
    }

    /**
     * Creates the shared topics of {@code topics}, the conversation-keyed ones with {@code partitions},
     * one replica (idempotent), on a broker that needs no client settings but its address.
     */
    public static void create(String bootstrap, TopicNames topics, int partitions) {
        create(bootstrap, topics, partitions, Replication.SINGLE);
    }

    /** As {@link #create(String, TopicNames, int)} with {@code replication}. */
    public static void create(String bootstrap, TopicNames topics, int partitions, Replication replication) {
        create(KafkaClientConfig.plain(bootstrap), topics, partitions, replication);
    }

    /** As {@link #create(String, TopicNames, int, Replication)}, with the client settings of {@code kafka}. */
    public static void create(KafkaClientConfig kafka, TopicNames topics, int partitions, Replication replication) {
        // first, so that it is created with its short retention (the call below then finds it)
        Topics.create(kafka, List.of(topics.typing()), partitions, replication,
                Map.of("retention.ms", Long.toString(TYPING_RETENTION_MS)));
        Topics.create(kafka, topics.conversationKeyed(), partitions, replication);
        Topics.create(kafka, topics.singlePartition(), 1, replication);
    }
}
