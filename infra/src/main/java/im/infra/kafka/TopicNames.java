package im.infra.kafka;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.util.List;

/**
 * The platform's topic names under one prefix (IM_TOPIC_PREFIX). The conversation-keyed topics
 * (events, cursors, interest, typing) share one partition count so that they are co-partitioned.
 */
public record TopicNames(String prefix) {
    public TopicNames {
        if (!prefix.matches("[A-Za-z0-9._-]{0,100}")) {
            throw new ConfigException(ConfigKeys.TOPIC_PREFIX.name(), "must match [A-Za-z0-9._-]{0,100}");
        }
    }

    public static TopicNames from(Settings s) {
        return new TopicNames(s.string(ConfigKeys.TOPIC_PREFIX));
    }

    /** Committed events of every conversation, keyed by conversation id (the CDC relay writes it). */
    public String events() {
        return prefix + "events";
    }

    /** Changes of device_cursors, keyed by conversation id. */
    public String cursors() {
        return prefix + "cursors";
    }

    /** Which device is online at which gateway for a conversation, keyed by conversation id. */
    public String interest() {
        return prefix + "interest";
    }

    /** Who is typing where, keyed by conversation id (ephemeral: kept {@link SharedTopics#TYPING_RETENTION_MS}). */
    public String typing() {
        return prefix + "typing";
    }

    /** Gateway heartbeats (key: gateway id); delivery nodes expire the interest of a silent gateway. */
    public String gateways() {
        return prefix + "gateways";
    }

    /** Low-volume notices every gateway reads, e.g. "user U joined conversation C" (one partition). */
    public String notices() {
        return prefix + "notices";
    }

    /** A gateway's own channel: events and hints for the devices it holds (one partition). */
    public String channel(String gatewayId) {
        return prefix + "gw." + gatewayId;
    }

    /** The single-partition topics every role needs. */
    public List<String> singlePartition() {
        return List.of(gateways(), notices());
    }

    /** The conversation-keyed topics, created with IM_PARTITIONS partitions. */
    public List<String> conversationKeyed() {
        return List.of(events(), cursors(), interest(), typing());
    }
}
