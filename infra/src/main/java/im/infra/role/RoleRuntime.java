package im.infra.role;

import im.infra.config.Settings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * One role of the platform (relay, delivery node, sweeper, gateway) as the lifecycle sees it:
 * built from the settings and started by {@link #start}, stopped by closing what that returned.
 * {@link RoleRunner} runs one role as a process; {@code im platform} starts several in one JVM
 * through the same method. Shared topics exist before {@code start} is called
 * ({@link im.infra.kafka.SharedTopics}).
 */
public interface RoleRuntime {

    /** The role's name in its readiness lines ({@code IM_READY <name> …}, {@code IM_RUNNING <name>}). */
    String name();

    /**
     * Validates the role's configuration in {@code s}, builds the role and starts it; its meters
     * go to {@code meters}. Returns once the role is started (not necessarily ready).
     */
    Running start(Settings s, PrometheusMeterRegistry meters);

    /**
     * The role of one component that the runner's ops server serves: {@code start} builds and
     * starts the component, {@code ready} is its readiness check, {@code readyDetail} the text of its
     * {@code IM_READY} line; closing the running role closes the component.
     */
    static <T extends AutoCloseable> RoleRuntime of(String name, BiFunction<Settings, PrometheusMeterRegistry, T> start,
                                                    Predicate<T> ready, Function<T, String> readyDetail) {
        return new ComponentRole<>(name, start, ready, readyDetail);
    }

    /** A started role. Closing it stops the role and releases what it opened. */
    interface Running extends AutoCloseable {

        /** The readiness check: {@code /readyz}, and when the role prints {@code IM_RUNNING}. */
        boolean isReady();

        /** What the {@code IM_READY} line tells after the role's name, e.g. {@code slot=s1}; may be empty. */
        String readyDetail();

        /**
         * True when the role serves {@code /healthz}, {@code /readyz} and {@code /metrics} on a port
         * of its own (the gateway); otherwise the runner starts an ops server on IM_OPS_PORT.
         */
        default boolean servesOps() {
            return false;
        }

        @Override
        void close();
    }
}
