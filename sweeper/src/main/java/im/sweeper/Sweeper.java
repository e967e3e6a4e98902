package im.sweeper;

import im.infra.role.Role;
import im.streams.StreamsApp;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link SweeperTopology} in a Kafka Streams application. Instances with the same topic
 * prefix form one application: a second instance takes over partitions (and their lagging pairs,
 * restored from the changelogs) when one dies, so hints continue without a database rescan.
 *
 * <p>Meters: {@code im.sweeper.hints} (device hints emitted), {@code im.sweeper.repairs} (hinted
 * pairs that caught up), {@code im.sweeper.pairs.visited} (online pairs the ticks looked at: the
 * sweeper's work, growing with the conversations that had events, not with each event),
 * {@code im.sweeper.lagging.over} (lagging pairs by age, tag {@code over}, see
 * {@link SweepStats}), {@code im.sweeper.lagging} (RocksDB's
 * estimate of the entries in this instance's {@value SweeperTopology#LAGGING_STORE} stores; NaN
 * while they are not queryable) and the Streams client's metrics, tagged {@code group} with the
 * application (= consumer group) id.
 */
public final class Sweeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

    private final StreamsApp app;
    private final SweepStats stats;

    private Sweeper(StreamsApp app, SweepStats stats, MeterRegistry meters) {
        this.app = app;
        this.stats = stats;
        FunctionCounter.builder("im.sweeper.hints", stats, SweepStats::hints)
                .description("device hints emitted (a hint to n devices counts n)").register(meters);
        FunctionCounter.builder("im.sweeper.repairs", stats, SweepStats::repairs)
                .description("hinted (device, conversation) pairs whose cursor then reached the head").register(meters);
        FunctionCounter.builder("im.sweeper.pairs.visited", stats, SweepStats::pairsVisited)
                .description("online (device, conversation) pairs the ticks looked at (those of conversations whose due head moved)")
                .register(meters);
        for (int i = 0; i < SweepStats.AGES.size(); i++) {
            int age = i;
            Gauge.builder("im.sweeper.lagging.over", stats, st -> st.laggingOver(age))
                    .description("online (device, conversation) pairs lagging at least this long, at the last sweep")
                    .tag("over", SweepStats.tag(SweepStats.AGES.get(i))).register(meters);
        }
        Gauge.builder("im.sweeper.lagging", this, Sweeper::laggingEstimate)
                .description("lagging (device, conversation) pairs in this instance's stores (estimate)").register(meters);
    }

    /** Builds the topology of {@code cfg} and starts it; its meters go to {@code meters}. */
    public static Sweeper start(SweeperConfig cfg, MeterRegistry meters) {
        SweepStats stats = new SweepStats();
        StreamsApp app = StreamsApp.start("sweeper", SweeperTopology.build(cfg.topics(), cfg.sweep(), cfg.backoff(), cfg.lease(),
                        cfg.interestRenew(), cfg.ackThrottle(), stats),
                cfg.topics().prefix(), cfg.kafka(), cfg.stateDir(), cfg.replication(), meters, log);
        return new Sweeper(app, stats, meters);
    }

    /** An instance as a role ({@code im sweeper}): ready once Streams is RUNNING (state restored, punctuating). */
    public static Role<Sweeper> role() {
        return Role.of("sweeper", (s, meters) -> start(SweeperConfig.from(s), meters), Sweeper::isRunning, sweeper -> "");
    }

    /** Started and RUNNING (tasks assigned, stores restored). */
    public boolean isRunning() {
        return app.isRunning();
    }

    /** RocksDB's estimate of the lagging pairs held by this instance's tasks; NaN while not queryable. */
    private double laggingEstimate() {
        if (!app.isRunning()) return Double.NaN;
        KafkaStreams s = app.streams();
        try {
            return s.store(StoreQueryParameters.fromNameAndType(SweeperTopology.LAGGING_STORE,
                    QueryableStoreTypes.<String, String>keyValueStore())).approximateNumEntries();
        } catch (InvalidStateStoreException e) {
            return Double.NaN;   // a rebalance began since the state check
        }
    }

    /** Device hints emitted by this instance since start (a hint to n devices counts n). */
    public long hintsEmitted() {
        return stats.hints();
    }

    /** Hinted pairs that caught up since start (also the {@code im.sweeper.repairs} meter). */
    public long repairsCompleted() {
        return stats.repairs();
    }

    @Override
    public void close() {
        app.close();
    }
}
