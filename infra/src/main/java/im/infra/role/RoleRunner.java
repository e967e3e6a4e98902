package im.infra.role;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.SharedTopics;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs one role as the process's whole job, the same way for every role: read the settings,
 * create the shared topics (when Kafka is configured), start the role and its ops server, register
 * one shutdown hook that closes them in reverse order, print {@code IM_READY <role> <detail>
 * [ops=<url>]} once started and {@code IM_RUNNING <role>} once its readiness check passes, then
 * wait for the hook. Tests and scripts wait for those two lines; their format is fixed.
 */
public final class RoleRunner {
    private final Role<?> role;
    private final PrintStream out;
    private final Closer started = new Closer();
    private String opsUrl;   // null when the role serves its own ops endpoints

    RoleRunner(Role<?> role, PrintStream out) {
        this.role = role;
        this.out = out;
    }

    /** Runs {@code role} with the process's settings until the JVM is stopped. */
    public static void run(Role<?> role) throws InterruptedException {
        RoleRunner runner = new RoleRunner(role, System.out);
        Role.Running<?> running = runner.start(Settings.fromEnvironment());
        Runtime.getRuntime().addShutdownHook(new Thread(runner::close, role.name() + "-shutdown"));
        runner.announce(running);
        new CountDownLatch(1).await();   // role threads may be daemons: keep the JVM until the hook runs
    }

    /** Creates the shared topics, starts the role and (unless it serves its own) its ops server. */
    Role.Running<?> start(Settings s) {
        try {
            s.optional(ConfigKeys.KAFKA_BOOTSTRAP).ifPresent(bootstrap -> SharedTopics.create(bootstrap, s));
            PrometheusMeterRegistry meters = Metrics.newRegistry();
            Role.Running<?> running = started.push(role.start(s, meters));
            if (!running.servesOps()) {
                opsUrl = started.push(OpsServer.start(OpsConfig.from(s), meters, running::isReady)).url();
            }
            return running;
        } catch (RuntimeException e) {
            started.closeAll();
            throw e;
        }
    }

    /** Prints the IM_READY line, waits until the role is ready, prints the IM_RUNNING line. */
    void announce(Role.Running<?> running) {
        String detail = running.readyDetail();
        out.println("IM_READY " + role.name() + (detail.isEmpty() ? "" : " " + detail)
                + (opsUrl == null ? "" : " ops=" + opsUrl));
        out.flush();
        while (!running.isReady()) LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        out.println("IM_RUNNING " + role.name());
        out.flush();
    }

    /** Closes the ops server, then the role (the shutdown hook). */
    void close() {
        started.closeAll();
    }
}
