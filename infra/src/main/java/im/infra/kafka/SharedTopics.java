package im.infra.kafka;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;

/**
 * The one place that knows every topic the roles share and its partition count: the
 * conversation-keyed topics with IM_PARTITIONS partitions (co-partitioned), the others with one.
 * Every way of starting roles calls this before starting them; a gateway's own channel topic is
 * created by that gateway, as it belongs to that instance.
 */
public final class SharedTopics {
    private SharedTopics() {
    }

    /** Creates the shared topics named by IM_TOPIC_PREFIX with IM_PARTITIONS partitions (idempotent). */
    public static void create(String bootstrap, Settings s) {
        create(bootstrap, TopicNames.from(s), s.get(ConfigKeys.PARTITIONS));
    }

    /** Creates the shared topics of {@code topics}, the conversation-keyed ones with {@code partitions} (idempotent). */
    public static void create(String bootstrap, TopicNames topics, int partitions) {
        Topics.create(bootstrap, topics.conversationKeyed(), partitions);
        Topics.create(bootstrap, topics.singlePartition(), 1);
    }
}
