package im.embedded;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

/**
 * A KRaft cluster of {@code size} combined broker+controller nodes, each a child JVM
 * ({@link KafkaBrokerProcess}) on loopback, so a fault test can {@code kill -9} one node (the leader
 * of a partition, or the active controller) and restart it on the same ports and data. Internal
 * topics (group offsets, transactions, share state) and topics created without settings get
 * replication factor {@code min(3, size)} and {@code min.insync.replicas} one less (at least 1);
 * unclean leader election is off. Layout: {@code <dir>/node-<id>/} per node.
 */
public final class KafkaCluster extends LocalBroker {

    private final List<KafkaBrokerProcess> nodes;

    private KafkaCluster(Path dir, List<KafkaBrokerProcess> nodes, boolean deleteOnClose) {
        super(dir, deleteOnClose);
        this.nodes = nodes;
    }

    /**
     * Formats and starts {@code size} nodes (ids 1..size) in parallel and blocks until every node is
     * registered, or throws {@link BrokerStartException} naming the log of the failing node.
     *
     * @param keepData keep {@code dir} (and so the nodes' logs) on close
     */
    public static KafkaCluster start(Path dir, int size, boolean keepData) {
        Objects.requireNonNull(dir, "dir");
        if (size < 1 || size > 9) {
            throw new IllegalArgumentException("size must be 1..9, was " + size);
        }
        int[] brokerPorts = new int[size];
        int[] controllerPorts = new int[size];
        List<String> voters = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            brokerPorts[i] = BrokerSettings.freePort();
            controllerPorts[i] = BrokerSettings.freePort();
            voters.add((i + 1) + "@" + BrokerSettings.HOST + ":" + controllerPorts[i]);
        }
        int rf = Math.min(3, size);
        int minIsr = Math.max(1, rf - 1);
        String clusterId = Uuid.randomUuid().toString();
        List<KafkaBrokerProcess> nodes = new ArrayList<>();
        KafkaCluster cluster = new KafkaCluster(dir, nodes, !keepData);
        try {
            for (int i = 0; i < size; i++) {
                int id = i + 1;
                Path nodeDir = dir.resolve("node-" + id);
                Properties props = BrokerSettings.nodeProperties(id, String.join(",", voters),
                        nodeDir.resolve(BrokerSettings.LOG_DIR_NAME), brokerPorts[i], controllerPorts[i], rf, minIsr);
                nodes.add(KafkaBrokerProcess.spawnNode(nodeDir, id, brokerPorts[i], props, clusterId));
            }
            for (KafkaBrokerProcess n : nodes) n.awaitReady();
        } catch (RuntimeException e) {
            nodes.forEach(KafkaBrokerProcess::kill);
            cluster.closeKeepingData();   // the nodes are dead already; keep their logs, which say why
            throw e;
        }
        return cluster;
    }

    public int size() {
        return nodes.size();
    }

    /** Node {@code id} (1-based, as the KRaft node id). */
    public KafkaBrokerProcess node(int id) {
        if (id < 1 || id > nodes.size()) throw new IllegalArgumentException("no node " + id + " in a cluster of " + nodes.size());
        return nodes.get(id - 1);
    }

    public List<KafkaBrokerProcess> nodes() {
        return List.copyOf(nodes);
    }

    /** Every node's client address, so a client still finds the cluster while any one node is down. */
    @Override
    public String bootstrapServers() {
        return nodes.stream().map(KafkaBrokerProcess::bootstrapServers).collect(Collectors.joining(","));
    }

    /** The node id leading {@code topic}'s {@code partition} now, asked of the running nodes. */
    public int leaderOf(String topic, int partition) {
        try (Admin admin = admin()) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(15, TimeUnit.SECONDS).get(topic);
            TopicPartitionInfo p = d.partitions().get(partition);
            Node leader = p.leader();
            if (leader == null || leader.isEmpty()) throw new IllegalStateException(topic + "-" + partition + " has no leader");
            return leader.id();
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot describe " + topic + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The node id of the active KRaft controller (the quorum leader). */
    public int activeController() {
        try (Admin admin = admin()) {
            return admin.describeMetadataQuorum().quorumInfo().get(15, TimeUnit.SECONDS).leaderId();
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot describe the metadata quorum: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, runningBootstrap());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        return Admin.create(p);
    }

    private String runningBootstrap() {
        String s = nodes.stream().filter(KafkaBrokerProcess::isAlive).map(KafkaBrokerProcess::bootstrapServers)
                .collect(Collectors.joining(","));
        if (s.isEmpty()) throw new IllegalStateException("no node of " + this + " is running");
        return s;
    }

    /** Stops every node (SIGTERM, then SIGKILL); {@link #close()} then deletes the data unless kept. */
    @Override
    void stop() {
        // Stop in parallel: a lone survivor waits for a quorum that is gone before it exits.
        nodes.forEach(KafkaBrokerProcess::signalStop);
        nodes.forEach(KafkaBrokerProcess::close);
    }

    @Override
    public String toString() {
        return "KafkaCluster[" + bootstrapServers() + ", " + dataDir + "]";
    }
}
