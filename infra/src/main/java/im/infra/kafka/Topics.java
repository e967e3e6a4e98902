package im.infra.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Explicit, idempotent topic management (brokers run with {@code auto.create.topics.enable=false}).
 * A create returns once every running broker knows the topics, so a client started next finds
 * them whichever broker it asks.
 * Every call uses a short-lived Admin client with bounded timeouts ({@value #TIMEOUT_MS} ms per
 * operation) and fails with {@link IllegalStateException} rather than hanging.
 */
public final class Topics {

    static final int TIMEOUT_MS = 30_000;
    static final int PROBE_MS = 5_000;
    private static final Logger log = LoggerFactory.getLogger(Topics.class);

    private Topics() {
    }

    /**
     * {@link #create(KafkaClientConfig, Collection, int, Replication)} with one replica, on a broker
     * that needs no client settings but its address (the embedded one, tests).
     */
    public static void create(String bootstrap, Collection<String> names, int partitions) {
        create(KafkaClientConfig.plain(bootstrap), names, partitions, Replication.SINGLE);
    }

    /** {@link #create(KafkaClientConfig, Collection, int, Replication)} on a broker that needs no client settings but its address. */
    public static void create(String bootstrap, Collection<String> names, int partitions, Replication replication) {
        create(KafkaClientConfig.plain(bootstrap), names, partitions, replication);
    }

    /**
     * Creates each topic with {@code partitions} partitions and {@code replication}'s factor and
     * {@code min.insync.replicas}; a factor above the registered brokers (fenced ones included) is a
     * ConfigException naming IM_REPLICATION_FACTOR. While fewer brokers are live than the factor (one
     * is down or restarting), a topic that must be created is retried until one comes back, within
     * the timeout; one that exists needs no live broker more. A topic that already exists with the same partition count is fine
     * (its replication is left as it is); a different count is an {@link IllegalStateException}
     * naming the topic and both counts.
     *
     * <p>Safe to call from many processes at once (every role creates its topics at start): the
     * controller answers TopicExists as soon as a racing creator's topic is committed, before the
     * broker that describes it has applied that metadata, so an existing topic is waited for
     * (bounded) like a created one rather than described once.
     */
    public static void create(KafkaClientConfig kafka, Collection<String> names, int partitions, Replication replication) {
        create(kafka, names, partitions, replication, Map.of());
    }

    /** As {@link #create(KafkaClientConfig, Collection, int, Replication)}, with {@code topicConfigs} for the topics it creates. */
    public static void create(KafkaClientConfig kafka, Collection<String> names, int partitions, Replication replication,
                              Map<String, String> topicConfigs) {
        String bootstrap = kafka.bootstrap();
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1, was " + partitions);
        }
        Set<String> topics = new LinkedHashSet<>(names);
        if (topics.isEmpty()) {
            return;
        }
        try (Admin admin = admin(kafka)) {
            // The factor must fit the registered brokers, fenced ones included: a broker that is
            // down (a rolling restart) still counts, and a topic that needs it waits for it below.
            Collection<Node> registered = await(admin.describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)
                    .includeFencedBrokers(true)).nodes(), "describeCluster", bootstrap);
            replication.checkFits(registered.size(), bootstrap);
            short rf = (short) replication.factor();
            Map<String, String> configs = new java.util.HashMap<>(topicConfigs);
            configs.put("min.insync.replicas", Integer.toString(replication.minInsyncReplicas()));
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
            Set<String> existing = new LinkedHashSet<>();
            Set<String> pending = new LinkedHashSet<>(topics);
            boolean waited = false;
            while (!pending.isEmpty()) {
                List<NewTopic> requests = pending.stream()
                        .map(t -> new NewTopic(t, Optional.of(partitions), Optional.of(rf)).configs(configs))
                        .toList();
                Map<String, KafkaFuture<Void>> results =
                        admin.createTopics(requests, new CreateTopicsOptions().timeoutMs(TIMEOUT_MS)).values();
                Set<String> tooFewLive = new LinkedHashSet<>();
                for (Map.Entry<String, KafkaFuture<Void>> r : results.entrySet()) {
                    try {
                        await(r.getValue(), "createTopics " + r.getKey(), bootstrap);
                    } catch (IllegalStateException e) {
                        if (e.getCause() instanceof TopicExistsException) {
                            existing.add(r.getKey());
                        } else if (e.getCause() instanceof InvalidReplicationFactorException && System.nanoTime() < deadline) {
                            tooFewLive.add(r.getKey());   // a registered broker is down: wait for it
                        } else {
                            throw e;
                        }
                    }
                }
                if (!tooFewLive.isEmpty() && !waited) {
                    waited = true;
                    log.info("topics {}: fewer live brokers than the replication factor {}; waiting for a broker to come back",
                            tooFewLive, rf);
                }
                if (!tooFewLive.isEmpty()) java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
                pending = tooFewLive;
            }
            Collection<Node> brokers = await(admin.describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)).nodes(),
                    "describeCluster", bootstrap);
            deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
            awaitVisible(admin, topics, existing, partitions, bootstrap, deadline);
            if (brokers.size() > 1) {
                for (Node broker : brokers) awaitKnownTo(kafka, broker, topics, partitions, deadline);
            }
        }
    }

    /**
     * Returns once the broker the Admin client asks describes every topic with {@code partitions}
     * partitions. A created topic is not at once in that broker's metadata (a Streams global store
     * started right after fails with "no partitions available"), nor is one that a racing creator
     * just created and we were told exists. A described topic with another count fails at once: that is a real conflict
     * (an older deployment, or a racing creator with another IM_PARTITIONS), not propagation.
     */
    private static void awaitVisible(Admin admin, Set<String> topics, Set<String> existing, int partitions,
                                     String bootstrap, long deadline) {
        while (true) {
            Map<String, Integer> seen = describe(admin, topics, bootstrap);
            for (Map.Entry<String, Integer> t : seen.entrySet()) {
                if (t.getValue() != partitions) {
                    throw new IllegalStateException("topic " + t.getKey() + " exists with " + t.getValue()
                            + " partitions, but " + partitions + " were requested");
                }
            }
            if (seen.size() == topics.size()) return;
            if (System.nanoTime() > deadline) {
                Set<String> missing = new TreeSet<>(topics);
                missing.removeAll(seen.keySet());
                Set<String> saidToExist = new TreeSet<>(missing);
                saidToExist.retainAll(existing);
                throw new IllegalStateException("topics " + missing + " not visible on " + bootstrap + " within "
                        + TIMEOUT_MS + " ms of creation" + (saidToExist.isEmpty() ? ""
                        : " (" + saidToExist + " reported as existing: deleted meanwhile, or a broker that never learns of them)"));
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /**
     * Returns once {@code broker} answers a metadata request with every topic at {@code partitions}
     * partitions. The Admin client above asks one broker of its choosing, but each broker applies
     * the controller's metadata on its own, a little later, and a client asks whichever it reaches:
     * a Streams global store whose consumer reached a broker that had not yet applied the topic
     * failed at start with "There are no partitions available" (KafkaClusterIT in CI). A fresh
     * consumer whose only bootstrap address is {@code broker} sends its first metadata request there,
     * so one consumer per attempt asks exactly that broker. A broker that does not answer within
     * {@value #PROBE_MS} ms is skipped: it serves no client either, and a restarted broker catches
     * up with the metadata log before it serves requests.
     */
    private static void awaitKnownTo(KafkaClientConfig kafka, Node broker, Set<String> topics, int partitions, long deadline) {
        String address = broker.host() + ":" + broker.port();
        while (true) {
            Map<String, List<PartitionInfo>> known;
            try (KafkaConsumer<byte[], byte[]> probe = probe(kafka, address)) {
                known = probe.listTopics(Duration.ofMillis(PROBE_MS));
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                log.warn("broker {} at {} did not answer a metadata request within {} ms; not waiting for it to know {}",
                        broker.id(), address, PROBE_MS, topics);
                return;
            }
            Set<String> missing = new TreeSet<>();
            for (String t : topics) {
                List<PartitionInfo> p = known.get(t);
                if (p == null || p.size() != partitions) missing.add(t);
            }
            if (missing.isEmpty()) return;
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("broker " + broker.id() + " at " + address + " does not know " + missing
                        + " with " + partitions + " partitions within " + TIMEOUT_MS + " ms of their creation");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    private static KafkaConsumer<byte[], byte[]> probe(KafkaClientConfig kafka, String address) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, address);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "im-topics-probe");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(PROBE_MS));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(kafka.clientProperties(p));
    }

    /** Partition count per topic, in name order; topics that do not exist are absent from the map. */
    public static Map<String, Integer> describe(KafkaClientConfig kafka, Collection<String> names) {
        try (Admin admin = admin(kafka)) {
            return describe(admin, new LinkedHashSet<>(names), kafka.bootstrap());
        }
    }

    private static Map<String, Integer> describe(Admin admin, Set<String> names, String bootstrap) {
        Map<String, Integer> out = new TreeMap<>();
        if (names.isEmpty()) {
            return out;
        }
        Map<String, KafkaFuture<TopicDescription>> futures =
                admin.describeTopics(names, new DescribeTopicsOptions().timeoutMs(TIMEOUT_MS)).topicNameValues();
        for (Map.Entry<String, KafkaFuture<TopicDescription>> f : futures.entrySet()) {
            try {
                out.put(f.getKey(), await(f.getValue(), "describeTopics " + f.getKey(), bootstrap).partitions().size());
            } catch (IllegalStateException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
        }
        return out;
    }

    private static Admin admin(KafkaClientConfig kafka) {
        Properties p = new Properties();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(TIMEOUT_MS / 2));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Integer.toString(TIMEOUT_MS));
        return Admin.create(kafka.clientProperties(p));
    }

    /** Waits a bounded time; any failure becomes IllegalStateException with the Kafka cause. */
    private static <T> T await(KafkaFuture<T> future, String what, String bootstrap) {
        try {
            return future.get(TIMEOUT_MS + 5_000L, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(what + " failed on " + bootstrap + ": " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(what + " timed out after " + (TIMEOUT_MS + 5_000) + " ms on " + bootstrap, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(what + " interrupted", e);
        }
    }
}
