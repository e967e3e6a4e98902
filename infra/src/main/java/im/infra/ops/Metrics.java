package im.infra.ops;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The process's meter registry. Each main (or {@code im platform}) creates one Prometheus registry
 * with {@link #newRegistry()} and hands it to every component it builds; components constructed
 * without one record into a private {@link #detached()} registry, so tests and tools that do not
 * care about metrics need not pass one. Meter names follow Micrometer's dotted style
 * ({@code im.sends}); the Prometheus registry renders them as {@code im_sends_total}.
 */
public final class Metrics {
    /** Content type of {@link PrometheusMeterRegistry#scrape()}: the Prometheus text format. */
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private Metrics() {}

    /** A Prometheus registry with the JVM's memory, thread, CPU and uptime meters bound. */
    public static PrometheusMeterRegistry newRegistry() {
        PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new JvmMemoryMetrics().bindTo(r);
        new JvmThreadMetrics().bindTo(r);
        new ProcessorMetrics().bindTo(r);
        new UptimeMetrics().bindTo(r);
        return r;
    }

    /** A registry nobody scrapes, for components built without one (counts still work locally). */
    public static MeterRegistry detached() {
        return new SimpleMeterRegistry();
    }
}
