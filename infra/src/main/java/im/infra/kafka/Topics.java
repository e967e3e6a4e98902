package im.infra.kafka;

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
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Explicit, idempotent topic management (brokers run with {@code auto.create.topics.enable=false}).
 * Every call uses a short-lived Admin client with bounded timeouts ({@value #TIMEOUT_MS} ms per
 * operation) and fails with {@link IllegalStateException} rather than hanging.
 */
public final class Topics {

    static final int TIMEOUT_MS = 30_000;

    private Topics() {
    }

    /** {@link #create(String, Collection, int, Replication)} with one replica (the single-node default). */
    public static void create(String bootstrap, Collection<String> names, int partitions) {
        create(bootstrap, names, partitions, Replication.SINGLE);
    }

    /**
     * Creates each topic with {@code partitions} partitions and {@code replication}'s factor and
     * {@code min.insync.replicas}; a factor above the registered brokers is a ConfigException naming
     * IM_REPLICATION_FACTOR. A topic that already exists with the same partition count is fine
     * (its replication is left as it is); a different count is an {@link IllegalStateException}
     * naming the topic and both counts.
     *
     * <p>Safe to call from many processes at once (every role creates its topics at start): the
     * controller answers TopicExists as soon as a racing creator's topic is committed, before the
     * broker that describes it has applied that metadata, so an existing topic is waited for
     * (bounded) like a created one rather than described once.
     */
    public static void create(String bootstrap, Collection<String> names, int partitions, Replication replication) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1, was " + partitions);
        }
        Set<String> topics = new LinkedHashSet<>(names);
        if (topics.isEmpty()) {
            return;
        }
        try (Admin admin = admin(bootstrap)) {
            int brokers = await(admin.describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)).nodes(),
                    "describeCluster", bootstrap).size();
            replication.checkFits(brokers, bootstrap);
            short rf = (short) replication.factor();
            Map<String, String> configs = Map.of("min.insync.replicas", Integer.toString(replication.minInsyncReplicas()));
            List<NewTopic> requests = topics.stream()
                    .map(t -> new NewTopic(t, Optional.of(partitions), Optional.of(rf)).configs(configs))
                    .toList();
            Map<String, KafkaFuture<Void>> results =
                    admin.createTopics(requests, new CreateTopicsOptions().timeoutMs(TIMEOUT_MS)).values();
            Set<String> existing = new LinkedHashSet<>();
            for (Map.Entry<String, KafkaFuture<Void>> r : results.entrySet()) {
                try {
                    await(r.getValue(), "createTopics " + r.getKey(), bootstrap);
                } catch (IllegalStateException e) {
                    if (e.getCause() instanceof TopicExistsException) {
                        existing.add(r.getKey());
                    } else {
                        throw e;
                    }
                }
            }
            awaitVisible(admin, topics, existing, partitions, bootstrap);
        }
    }

    /**
     * Returns once every topic is described with {@code partitions} partitions. A created topic
     * is not at once in every broker's metadata (a Streams global store started right after fails
     * with "no partitions available"), nor is one that a racing creator just created and we were
     * told exists. A described topic with another count fails at once: that is a real conflict
     * (an older deployment, or a racing creator with another IM_PARTITIONS), not propagation.
     */
    private static void awaitVisible(Admin admin, Set<String> topics, Set<String> existing, int partitions,
                                     String bootstrap) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
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

    /** Partition count per topic, in name order; topics that do not exist are absent from the map. */
    public static Map<String, Integer> describe(String bootstrap, Collection<String> names) {
        try (Admin admin = admin(bootstrap)) {
            return describe(admin, new LinkedHashSet<>(names), bootstrap);
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

    private static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(TIMEOUT_MS / 2));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Integer.toString(TIMEOUT_MS));
        return Admin.create(p);
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
