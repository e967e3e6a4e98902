package im.infra.kafka;

/** Consumer settings every long-running consumer of the platform shares (delivery, sweeper, gateway). */
public final class ConsumerDefaults {
    /**
     * How long the broker holds a fetch that finds no new record: the Kafka default, 500 ms. A held
     * fetch is answered as soon as a record is appended to one of its partitions, so this bounds
     * the idle fetch rate, not latency; at 50 ms every idle consumer cost itself and the broker 20
     * fetches a second (docs/benchmarks.md, "Idle CPU").
     */
    public static final String FETCH_MAX_WAIT_MS = "500";

    private ConsumerDefaults() {}
}
