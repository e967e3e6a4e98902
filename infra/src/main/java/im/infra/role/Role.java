package im.infra.role;

import im.infra.config.Settings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * One role of the platform (relay, delivery node, sweeper, gateway) as the lifecycle sees it:
 * {@link #start} reads the role's configuration from the settings and starts it through the role
 * class's one static factory; closing what that returned stops it. Each role class offers this as
 * {@code static Role<X> role()}. {@link RoleRunner} runs one role as a process; {@code im platform}
 * starts several in one JVM through the same method. Shared topics exist before {@code start} is
 * called ({@link im.infra.kafka.SharedTopics}).
 *
 * @param <T> what the started role is (its class: {@code Gateway}, {@code CdcRelay} ...)
 */
public final class Role<T> {
    private final String name;
    private final BiFunction<Settings, PrometheusMeterRegistry, Running<T>> start;

    /**
     * @param name  the role's name in its readiness lines
     * @param start validates the role's configuration in the settings, builds the role, starts it
     *              with its meters in the registry and returns once it is started (not necessarily ready)
     */
    public Role(String name, BiFunction<Settings, PrometheusMeterRegistry, Running<T>> start) {
        this.name = name;
        this.start = start;
    }

    /**
     * The role of one component that the runner's ops server serves: {@code start} builds and
     * starts it (its class's static factory), {@code ready} is its readiness check,
     * {@code readyDetail} the text of its {@code IM_READY} line; closing the running role closes it.
     */
    public static <T extends AutoCloseable> Role<T> of(String name, BiFunction<Settings, PrometheusMeterRegistry, T> start,
                                                       Predicate<T> ready, Function<T, String> readyDetail) {
        return new Role<>(name, (s, meters) -> {
            T component = start.apply(s, meters);
            return new Running<>(component, ready, readyDetail, false, component);
        });
    }

    /** The role's name in its readiness lines ({@code IM_READY <name> …}, {@code IM_RUNNING <name>}). */
    public String name() {
        return name;
    }

    /** Builds the role from {@code s} and starts it; its meters go to {@code meters}. */
    public Running<T> start(Settings s, PrometheusMeterRegistry meters) {
        return start.apply(s, meters);
    }

    /**
     * A started role. Closing it ({@code stop}) stops the role and releases what it opened.
     *
     * @param component   the started role itself (for what its readiness line does not tell, e.g. a gateway's ports)
     * @param ready       the readiness check: {@code /readyz}, and when the role prints {@code IM_RUNNING}
     * @param detail      what the {@code IM_READY} line tells after the role's name, e.g. {@code slot=s1}; may be empty
     * @param servesOps   true when the role serves {@code /healthz}, {@code /readyz} and {@code /metrics}
     *                    on a port of its own (the gateway); otherwise the runner starts an ops server on IM_OPS_PORT
     */
    public record Running<T>(T component, Predicate<T> ready, Function<T, String> detail, boolean servesOps,
                             AutoCloseable stop) implements AutoCloseable {

        public boolean isReady() {
            return ready.test(component);
        }

        public String readyDetail() {
            return detail.apply(component);
        }

        @Override
        public void close() {
            try {
                stop.close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("stopping " + component.getClass().getSimpleName() + ": " + e.getMessage(), e);
            }
        }
    }
}
