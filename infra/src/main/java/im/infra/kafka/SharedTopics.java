package im.infra.kafka;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;

/**
 * The one place that knows every topic the roles share, its partition count and replication: the
 * conversation-keyed topics with IM_PARTITIONS partitions (co-partitioned), the others with one.
 * Every way of starting roles calls this before starting them; a gateway's own channel topic is
 * created by that gateway, as it belongs to that instance.
 */
public final class SharedTopics {
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
        Topics.create(kafka, topics.conversationKeyed(), partitions, replication);
        Topics.create(kafka, topics.singlePartition(), 1, replication);
    }
}
