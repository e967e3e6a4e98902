package im.sweeper;

import im.infra.role.RoleRuntime;
import im.streams.StreamsComponent;
import im.streams.StreamsRole;
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
public final class Sweeper extends StreamsComponent<Sweeper> {
    private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

    private final SweeperConfig cfg;
    private final SweepStats stats = new SweepStats();

    public Sweeper(SweeperConfig cfg, MeterRegistry meters) {
        super(meters);
        this.cfg = cfg;
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

    /** An instance as a role ({@code im sweeper}): ready once Streams is RUNNING (state restored, punctuating). */
    public static RoleRuntime role() {
        return RoleRuntime.of("sweeper", (s, meters) -> new Sweeper(SweeperConfig.from(s), meters).start(),
                Sweeper::isRunning, sweeper -> "");
    }

    @Override
    protected StreamsRole startStreams() {
        return StreamsRole.start("sweeper", SweeperTopology.build(cfg.topics(), cfg.sweep(), cfg.backoff(), cfg.lease(), cfg.interestRenew(), cfg.ackThrottle(), stats),
                cfg.topics().prefix(), cfg.kafka(), cfg.stateDir(), cfg.replication(), meters, log);
    }

    /** RocksDB's estimate of the lagging pairs held by this instance's tasks; NaN while not queryable. */
    private double laggingEstimate() {
        StreamsRole role = streams();
        if (role == null || !role.isRunning()) return Double.NaN;
        KafkaStreams s = role.streams();
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
}
