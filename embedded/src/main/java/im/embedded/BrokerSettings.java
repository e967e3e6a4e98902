package im.embedded;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.properties.MetaPropertiesEnsemble;
import org.apache.kafka.metadata.storage.Formatter;

/**
 * The single-node KRaft configuration shared by both broker kinds, storage formatting, and the
 * readiness wait. Package-private: callers only see {@link KafkaBroker}.
 */
final class BrokerSettings {

    static final int NODE_ID = 1;
    static final String HOST = "127.0.0.1";
    static final Duration READY_DEADLINE = Duration.ofSeconds(120);
    static final String LOG_DIR_NAME = "kafka-logs";

    private BrokerSettings() {
    }

    /**
     * Server properties for one combined broker+controller node bound to loopback only.
     * Replication factors and min ISR are 1 for every internal topic: with the defaults (3) the
     * group/transaction/share coordinators never load and consumers hang.
     */
    static Properties serverProperties(Path logDir, int brokerPort, int controllerPort) {
        return nodeProperties(NODE_ID, NODE_ID + "@" + HOST + ":" + controllerPort, logDir, brokerPort, controllerPort, 1, 1);
    }

    /**
     * Server properties for node {@code nodeId} of a cluster of combined broker+controller nodes
     * with the static quorum {@code voters} ({@code id@host:port,...}). {@code replicationFactor}
     * and {@code minIsr} apply to the internal topics (group offsets, transactions, share state) and
     * are the broker defaults for topics created without them.
     */
    static Properties nodeProperties(int nodeId, String voters, Path logDir, int brokerPort, int controllerPort,
                                     int replicationFactor, int minIsr) {
        String rf = Integer.toString(replicationFactor);
        String isr = Integer.toString(minIsr);
        Map<String, String> p = new TreeMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", Integer.toString(nodeId));
        p.put("controller.quorum.voters", voters);
        p.put("listeners", "PLAINTEXT://" + HOST + ":" + brokerPort + ",CONTROLLER://" + HOST + ":" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://" + HOST + ":" + brokerPort);
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("log.dirs", logDir.toAbsolutePath().toString());
        p.put("offsets.topic.num.partitions", "4");   // 50 by default: slow first group start on 2 cores
        p.put("offsets.topic.replication.factor", rf);
        p.put("transaction.state.log.replication.factor", rf);
        p.put("transaction.state.log.min.isr", isr);
        p.put("share.coordinator.state.topic.replication.factor", rf);
        p.put("share.coordinator.state.topic.min.isr", isr);
        p.put("default.replication.factor", rf);
        p.put("min.insync.replicas", isr);
        // A replica that is not in sync never becomes leader: that would drop acknowledged records.
        p.put("unclean.leader.election.enable", "false");
        p.put("group.initial.rebalance.delay.ms", "0");
        // After a kill -9 the restarted node finds its previous incarnation still registered and
        // gets DUPLICATE_BROKER_REGISTRATION until that session expires (default 9 s, which made
        // a restart take ~15 s). Heartbeats stay inside one JVM here, so a shorter session is safe;
        // 3 s proved too short on a starved 2-core machine (the broker fenced itself).
        p.put("broker.heartbeat.interval.ms", "1000");
        p.put("broker.session.timeout.ms", "6000");
        // Topics are created explicitly (Topics.create): a typo must fail, not create a topic.
        p.put("auto.create.topics.enable", "false");
        p.put("num.partitions", "1");
        Properties props = new Properties();
        props.putAll(p);
        return props;
    }

    /** The SASL mechanism of {@link #withScram}. */
    static final String SCRAM = "SCRAM-SHA-256";

    /**
     * {@code props} (a single node's) turned into a broker only SCRAM users can use: the client
     * listener (also the inter-broker one, on which the node authenticates as {@code brokerUser})
     * speaks SASL_PLAINTEXT with SCRAM-SHA-256, the controller listener stays plain text on
     * loopback, and the StandardAuthorizer refuses whatever no ACL allows, except to the super
     * users: {@code brokerUser} and ANONYMOUS, the principal of the node's own controller
     * connection, which no client can have, as no client listener is plain text.
     */
    static Properties withScram(Properties props, int brokerPort, String brokerUser, String brokerPassword) {
        Properties p = new Properties();
        p.putAll(props);
        String controller = props.getProperty("listeners").replaceAll(".*(CONTROLLER://[^,]+).*", "$1");
        p.put("listeners", "CLIENT://" + HOST + ":" + brokerPort + "," + controller);
        p.put("advertised.listeners", "CLIENT://" + HOST + ":" + brokerPort);
        p.put("listener.security.protocol.map", "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("inter.broker.listener.name", "CLIENT");
        p.put("sasl.enabled.mechanisms", SCRAM);
        p.put("sasl.mechanism.inter.broker.protocol", SCRAM);
        p.put("listener.name.client.scram-sha-256.sasl.jaas.config", scramJaas(brokerUser, brokerPassword));
        p.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        p.put("allow.everyone.if.no.acl.found", "false");
        p.put("super.users", "User:" + brokerUser + ";User:ANONYMOUS");
        return p;
    }

    static String scramJaas(String user, String password) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                + "\" password=\"" + password + "\";";
    }

    /** Formats {@code logDir} as a fresh single-node cluster unless it already holds meta.properties. */
    static void formatIfNeeded(Path logDir) {
        formatIfNeeded(logDir, Map.of());
    }

    /** As {@link #formatIfNeeded(Path)}, with SCRAM-SHA-256 credentials of {@code scramUsers} (name to password) in the metadata. */
    static void formatIfNeeded(Path logDir, Map<String, String> scramUsers) {
        formatIfNeeded(logDir, NODE_ID, Uuid.randomUuid().toString(), scramUsers);
    }

    /** Formats {@code logDir} as node {@code nodeId} of cluster {@code clusterId} (static quorum) unless already formatted. */
    static void formatIfNeeded(Path logDir, int nodeId, String clusterId) {
        formatIfNeeded(logDir, nodeId, clusterId, Map.of());
    }

    private static void formatIfNeeded(Path logDir, int nodeId, String clusterId, Map<String, String> scramUsers) {
        if (isFormatted(logDir)) {
            return;
        }
        // Formatter prints progress; keep it only to explain a failure.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            Files.createDirectories(logDir);
            new Formatter()
                    .setPrintStream(new PrintStream(out, true, StandardCharsets.UTF_8))
                    .setNodeId(nodeId)
                    .setClusterId(clusterId)
                    .setControllerListenerName("CONTROLLER")
                    .setMetadataLogDirectory(logDir.toAbsolutePath().toString())
                    .addDirectory(logDir.toAbsolutePath().toString())
                    .setScramArguments(scramUsers.entrySet().stream()
                            .map(u -> SCRAM + "=[name=" + u.getKey() + ",password=" + u.getValue() + "]").toList())
                    .run();
        } catch (Exception e) {
            throw new BrokerStartException("Formatting Kafka storage in " + logDir + " failed: " + e.getMessage()
                    + " " + out.toString(StandardCharsets.UTF_8).trim(), e);
        }
    }

    static boolean isFormatted(Path logDir) {
        return Files.exists(logDir.resolve(MetaPropertiesEnsemble.META_PROPERTIES_NAME));
    }

    static void writeProperties(Properties props, Path file) {
        try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            props.store(w, "KRaft broker+controller node (generated by im.embedded)");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /**
     * A port that was free on 127.0.0.1 a moment ago, chosen at random below the kernel's
     * ephemeral range ({@code ip_local_port_range}). A port from {@code bind(0)} comes from that
     * range, the same one every outgoing connection takes its local port from: a cluster picks all
     * its nodes' ports before it starts them one by one, and the nodes started first (and any
     * client, PostgreSQL backend...) connect out meanwhile, so such a port could be taken before
     * the last node binds it (the cluster campaign once lost node 2 that way, "exited with code 1
     * before it was ready"). Below the range only another explicit bind can take it.
     */
    static int freePort() {
        int low = EPHEMERAL_LOW;
        int from = Math.max(1024, low - 12_000);
        if (low - from < 1000) return ephemeralPort();   // no room below the range: the old way
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = from + random.nextInt(low - from);
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
                return port;
            } catch (IOException inUse) {
                // taken: try another
            }
        }
        throw new UncheckedIOException(new IOException("no free port on " + HOST + " in " + from + "-" + (low - 1)));
    }

    private static int ephemeralPort() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on " + HOST, e);
        }
    }

    /** The first port of the kernel's ephemeral range, 32768 if it cannot be read (not Linux). */
    private static final int EPHEMERAL_LOW = ephemeralLow();

    private static int ephemeralLow() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
            return Integer.parseInt(range.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 32768;
        }
    }

    /** The last lines of a broker's log, for an exception whose log file is deleted with its temp dir. */
    static String tail(Path logFile, int lines) {
        try {
            java.util.List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | RuntimeException e) {
            return "(cannot read " + logFile + ": " + e + ")";
        }
    }

    /**
     * Blocks until {@code describeCluster} lists at least one broker, {@code deadline} passes
     * (BrokerStartException), or {@code failure} reports that the broker is gone (non-null
     * message: BrokerStartException immediately).
     */
    static void awaitReady(String bootstrap, Duration deadline, Supplier<String> failure) {
        awaitReady(bootstrap, NODE_ID, deadline, failure);
    }

    /** As {@link #awaitReady(String, Duration, Supplier)}, until the cluster lists node {@code nodeId}. */
    static void awaitReady(String bootstrap, int nodeId, Duration deadline, Supplier<String> failure) {
        awaitReady(bootstrap, nodeId, deadline, failure, Map.of());
    }

    /** As {@link #awaitReady(String, int, Duration, Supplier)}, with the client settings (SASL) {@code client}. */
    static void awaitReady(String bootstrap, int nodeId, Duration deadline, Supplier<String> failure, Map<String, String> client) {
        long end = System.nanoTime() + deadline.toNanos();
        Properties p = new Properties();
        p.putAll(client);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        Exception last = null;
        try (Admin admin = Admin.create(p)) {
            while (true) {
                String dead = failure.get();
                if (dead != null) {
                    throw new BrokerStartException(dead);
                }
                try {
                    var nodes = admin.describeCluster(new DescribeClusterOptions().timeoutMs(3000))
                            .nodes().get(4, TimeUnit.SECONDS);
                    if (nodes.stream().anyMatch(n -> n.id() == nodeId && !Node.noNode().equals(n))) {
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    last = e;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new BrokerStartException("interrupted while waiting for the broker at " + bootstrap, e);
                }
                if (System.nanoTime() - end > 0) {
                    throw new BrokerStartException("Kafka broker at " + bootstrap + " did not answer describeCluster within "
                            + deadline.toSeconds() + " s" + (last == null ? "" : "; last error: " + last.getMessage()), last);
                }
                // Failed fast (e.g. connection refused): do not spin.
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
            }
        }
    }

    static void deleteRecursively(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException exc) throws IOException {
                    if (exc instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE;
                    }
                    throw exc;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }
}
