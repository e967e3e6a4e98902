package im.infra.role;

import im.infra.config.Settings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;

/** {@link RoleRuntime#of}: a role that is one started component. */
final class ComponentRole<T extends AutoCloseable> implements RoleRuntime {
    private final String name;
    private final BiFunction<Settings, PrometheusMeterRegistry, T> start;
    private final Predicate<T> ready;
    private final Function<T, String> readyDetail;

    ComponentRole(String name, BiFunction<Settings, PrometheusMeterRegistry, T> start, Predicate<T> ready,
                  Function<T, String> readyDetail) {
        this.name = name;
        this.start = start;
        this.ready = ready;
        this.readyDetail = readyDetail;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Running start(Settings s, PrometheusMeterRegistry meters) {
        T component = start.apply(s, meters);
        return new Running() {
            @Override
            public boolean isReady() {
                return ready.test(component);
            }

            @Override
            public String readyDetail() {
                return readyDetail.apply(component);
            }

            @Override
            public void close() {
                try {
                    component.close();
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalStateException("closing " + name + ": " + e.getMessage(), e);
                }
            }
        };
    }
}
