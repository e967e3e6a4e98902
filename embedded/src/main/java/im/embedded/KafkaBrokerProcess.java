package im.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The same single-node KRaft broker as {@link EmbeddedKafkaBroker}, run as a child JVM
 * ({@code java -Xmx512m -cp <this JVM's class path> kafka.Kafka server.properties}) so a fault
 * test can SIGKILL it ({@link #kill()}) and bring it back ({@link #restart()}) on the same port
 * and the same, not reformatted, data. Layout of {@code dataDir}: {@code server.properties},
 * {@code kafka-logs/} (storage, formatted once by {@link #start}), {@code broker.log} (the
 * child's stdout and stderr, appended across restarts), {@code jvm.args} (the class path, passed
 * as a {@code @file} so its length never hits the per-argument limit).
 */
public final class KafkaBrokerProcess extends LocalBroker {

    private static final Logger log = LoggerFactory.getLogger(KafkaBrokerProcess.class);
    private static final long STOP_GRACE_SECONDS = 10;

    private final int nodeId;
    private final int port;
    private Process process;

    private KafkaBrokerProcess(Path dataDir, int nodeId, int port, boolean deleteOnClose) {
        super(dataDir, deleteOnClose);
        this.nodeId = nodeId;
        this.port = port;
    }

    /**
     * A node of a {@link KafkaCluster}: writes {@code props}, formats storage as {@code nodeId} of
     * {@code clusterId} (once) and launches the JVM without waiting, since a node of a multi-node
     * quorum cannot be ready before a majority of its peers runs; call {@link #awaitReady()}.
     */
    static KafkaBrokerProcess spawnNode(Path dataDir, int nodeId, int brokerPort, Properties props, String clusterId) {
        try {
            Files.createDirectories(dataDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dataDir, e);
        }
        BrokerSettings.writeProperties(props, dataDir.resolve("server.properties"));
        writeJvmArgs(dataDir.resolve("jvm.args"));
        BrokerSettings.formatIfNeeded(dataDir.resolve(BrokerSettings.LOG_DIR_NAME), nodeId, clusterId);
        KafkaBrokerProcess node = new KafkaBrokerProcess(dataDir, nodeId, brokerPort, false);
        node.spawn();
        return node;
    }

    /** {@link #start(Path, int, boolean)} deleting {@code dataDir} on close. */
    public static KafkaBrokerProcess start(Path dataDir, int port) {
        return start(dataDir, port, false);
    }

    /**
     * Formats storage in {@code dataDir} (if not yet formatted), launches the broker JVM and
     * blocks until it answers {@code describeCluster}, or throws {@link BrokerStartException}
     * (60 s, or at once if the child exits) naming the log file.
     *
     * @param port client port on 127.0.0.1; 0 picks a free one, kept across restarts
     * @param keepData keep {@code dataDir} (and so the broker log) on close
     */
    public static KafkaBrokerProcess start(Path dataDir, int port, boolean keepData) {
        Objects.requireNonNull(dataDir, "dataDir");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
        int brokerPort = port == 0 ? BrokerSettings.freePort() : port;
        int controllerPort = BrokerSettings.freePort();
        Path logDir = dataDir.resolve(BrokerSettings.LOG_DIR_NAME);
        try {
            Files.createDirectories(dataDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dataDir, e);
        }
        Properties props = BrokerSettings.serverProperties(logDir, brokerPort, controllerPort);
        BrokerSettings.writeProperties(props, dataDir.resolve("server.properties"));
        writeJvmArgs(dataDir.resolve("jvm.args"));
        BrokerSettings.formatIfNeeded(logDir);

        KafkaBrokerProcess broker = new KafkaBrokerProcess(dataDir, BrokerSettings.NODE_ID, brokerPort, !keepData);
        try {
            broker.launch();
        } catch (RuntimeException e) {
            broker.closeKeepingData();   // the exception points at broker.log
            throw e;
        }
        return broker;
    }

    /** SIGKILLs the broker JVM and waits until it is gone. No-op if it is not running. */
    public synchronized void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            awaitExit(process, STOP_GRACE_SECONDS);
        }
    }

    /**
     * Starts the broker again on the same ports and data directory (no reformatting; Kafka runs
     * log recovery after a kill) and waits until it is ready. Kills a running one first.
     */
    public synchronized void restart() {
        if (isClosed()) {
            throw new IllegalStateException("broker process is closed");
        }
        kill();
        launch();
    }

    /** Sends SIGTERM (controlled shutdown) without waiting; {@link #close()} then waits. */
    synchronized void signalStop() {
        if (process != null && process.isAlive()) process.destroy();
    }

    /** The KRaft node id ({@code 1} for a single broker, {@code 1..n} in a {@link KafkaCluster}). */
    public int nodeId() {
        return nodeId;
    }

    /** The OS process id of the current (or last) broker JVM. */
    public synchronized long pid() {
        if (process == null) {
            throw new IllegalStateException("broker process was never started");
        }
        return process.pid();
    }

    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** The child's stdout+stderr: read it when a fault test fails. */
    public Path logFile() {
        return dataDir.resolve("broker.log");
    }

    public Path dataDir() {
        return dataDir;
    }

    @Override
    public String bootstrapServers() {
        return BrokerSettings.HOST + ":" + port;
    }

    /** SIGTERM (controlled shutdown), up to 10 s, then SIGKILL ({@link #close()} then deletes data unless kept). */
    @Override
    synchronized void stop() {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!awaitExit(process, STOP_GRACE_SECONDS)) {
                log.warn("Kafka broker pid {} ignored SIGTERM for {} s; killing it", process.pid(), STOP_GRACE_SECONDS);
                kill();
            }
        }
    }

    @Override
    public String toString() {
        return "KafkaBrokerProcess[" + bootstrapServers() + ", " + dataDir + "]";
    }

    private void launch() {
        spawn();
        awaitReady();
    }

    /** Blocks until the cluster lists this node, or throws BrokerStartException naming the log file. */
    void awaitReady() {
        Process p;
        synchronized (this) {
            p = process;
        }
        BrokerSettings.awaitReady(bootstrapServers(), nodeId, BrokerSettings.READY_DEADLINE, () -> p.isAlive() ? null
                : "Kafka broker process exited with code " + p.exitValue() + " before it was ready; see " + logFile()
                        + ", which ends:\n" + BrokerSettings.tail(logFile(), 30));
        log.info("Kafka node {} (pid {}) ready at {} (data {})", nodeId, p.pid(), bootstrapServers(), dataDir);
    }

    private synchronized void spawn() {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(List.of(
                java.toString(),
                "-Xmx512m",
                "@" + dataDir.resolve("jvm.args").toAbsolutePath(),
                "kafka.Kafka",
                dataDir.resolve("server.properties").toAbsolutePath().toString()))
                .directory(dataDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(Redirect.appendTo(logFile().toFile()));
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new BrokerStartException("cannot launch " + java, e);
        }
    }

    private static boolean awaitExit(Process p, long seconds) {
        try {
            return p.waitFor(seconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** A JVM @argfile carrying the class path; quoted so spaces and backslashes survive. */
    private static void writeJvmArgs(Path file) {
        String cp = System.getProperty("java.class.path");
        String quoted = "\"" + cp.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        try {
            Files.writeString(file, "-cp\n" + quoted + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
