package im.relay;

import im.infra.kafka.TopicNames;
import im.infra.role.Role;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CDC relay: Debezium Embedded (pgoutput) streams committed inserts of {@code events} and
 * of {@code cursor_resets} (a reinstall's cursor removals) to Kafka, keyed by conversation, as
 * clean JSON ({@link ChangeMapper}); cursor moves are published by the cursor service. Only committed rows are ever published, in commit order.
 *
 * <p>At-least-once: a batch is marked processed only after Kafka acknowledged every record of
 * it ({@code acks=all}, idempotent producer); if publishing fails it is retried with back-off,
 * blocking the engine, never skipped. Positions are stored in Kafka and the slot advances only
 * when they are flushed, so a crash replays from the last flush: consumers dedup by (conv, seq).
 *
 * <p>One active relay per slot: an instance first takes a PostgreSQL advisory lock named after
 * the slot on a connection of its own; a second instance waits on it and takes over when the
 * first dies (its session, and with it the lock, ends). Slot and publication are created if
 * missing and never dropped.
 *
 * <p>A holder that freezes (SIGSTOP, a stalled VM) must lose the lock too, and on loopback the
 * kernel keeps a stopped process' TCP connections alive, so keepalive cannot tell. The lock
 * session therefore sets {@code idle_session_timeout} to {@link RelayConfig#lockTimeout()} (T)
 * and, for as long as the lock is held, a thread of its own ({@link LockKeeper}) runs a heartbeat
 * query on it every T/5: the server itself ends a silent holder's session after T, which
 * releases the lock. The heartbeat does not wait for the supervisor, so a slow takeover,
 * producer or engine start or stop (a loaded machine) never costs the lock. The instance that
 * wins the lock then terminates whatever walsender still has the slot (the frozen holder's,
 * which would otherwise keep it until {@code wal_sender_timeout}) before its engine starts.
 * Fencing: the holder publishes a batch only while its lease, T/2 from the start of its last
 * successful heartbeat, runs; the server cannot have ended the session by then. A thawed holder
 * finds its lease lapsed, publishes nothing, sees its heartbeat fail and goes back to standby. A
 * batch whose send started inside the lease can still complete late: it only repeats committed
 * events, which consumers drop by (conv, seq).
 *
 * <p>Meters (tag {@code slot}): {@code im.cdc.published} (changes acknowledged by Kafka),
 * {@code im.cdc.lag} (commit in PostgreSQL to Kafka's ack, with a percentile histogram) and
 * {@code im.relay.active} (1 while this instance holds the lock), and the slot's WAL ({@link SlotWal}).
 */
public final class CdcRelay implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CdcRelay.class);
    private static final Duration STANDBY_POLL = Duration.ofSeconds(1);
    private static final Duration RESTART_BACKOFF = Duration.ofSeconds(1);
    /**
     * Header on every published record naming the relay instance that sent it ({@code <pid>-<n>}):
     * with the record's timestamp it shows which relay published what, e.g. after a takeover.
     */
    public static final String INSTANCE_HEADER = "im-relay-instance";
    private static final AtomicLong INSTANCES = new AtomicLong();

    private final RelayConfig cfg;
    private final TopicNames topics;
    private final ChangeMapper mapper;
    private final Timer lag;
    private final SlotWal slotWal;
    /** Completed by {@link #close()}. */
    private final CompletableFuture<Void> stop = new CompletableFuture<>();
    private final AtomicLong published = new AtomicLong();
    private final AtomicLong restarts = new AtomicLong();
    private volatile LongConsumer lagObserver = lag -> { };
    private final Runnable engineStarting;
    private final String instance = ProcessHandle.current().pid() + "-" + INSTANCES.incrementAndGet();
    private final byte[] instanceBytes = instance.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    /** Renewed by the lock keeper's heartbeats, checked by the engine's handler before every send. */
    private final LockLease lease;
    private volatile boolean standby;
    private volatile DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private volatile KafkaProducer<String, String> producer;
    private final Thread supervisor;

    private CdcRelay(RelayConfig cfg, TopicNames topics, MeterRegistry meters, Runnable engineStarting) {
        this.cfg = cfg;
        this.topics = topics;
        this.engineStarting = engineStarting;
        this.mapper = new ChangeMapper(topics);
        this.lease = new LockLease(cfg.lockTimeout(), System::nanoTime);
        this.lag = Timer.builder("im.cdc.lag").description("commit in PostgreSQL to acknowledged by Kafka")
                .tag("slot", cfg.slot()).publishPercentileHistogram().register(meters);
        FunctionCounter.builder("im.cdc.published", this, CdcRelay::published)
                .description("changes published to Kafka and acknowledged").tag("slot", cfg.slot()).register(meters);
        FunctionCounter.builder("im.cdc.engine.restarts", restarts, AtomicLong::get)
                .description("times the Debezium engine was restarted after it failed").tag("slot", cfg.slot()).register(meters);
        Gauge.builder("im.relay.active", this, r -> r.isActive() ? 1 : 0)
                .description("1 while this instance holds the slot's lock and streams").tag("slot", cfg.slot()).register(meters);
        this.slotWal = new SlotWal(cfg.slot(), meters);
        this.supervisor = new Thread(this::supervise, "relay-supervisor-" + cfg.slot());
        this.supervisor.setDaemon(true);
    }

    /** Starts a relay for the slot of {@code cfg}: a standby until it holds the slot's lock; its meters go to {@code meters}. */
    public static CdcRelay start(RelayConfig cfg, TopicNames topics, MeterRegistry meters) {
        return start(cfg, topics, meters, () -> { });
    }

    /**
     * Test seam: {@code engineStarting} runs on the thread that builds the engine, each time, right
     * before it does (a test makes engine construction slow with it).
     */
    static CdcRelay start(RelayConfig cfg, TopicNames topics, MeterRegistry meters, Runnable engineStarting) {
        CdcRelay relay = new CdcRelay(cfg, topics, meters, engineStarting);
        relay.supervisor.start();
        return relay;
    }

    /** The relay as a role ({@code im relay}): ready while active or a standby that reached PostgreSQL. */
    public static Role<CdcRelay> role() {
        return Role.of("relay", (s, meters) -> start(RelayConfig.from(s), TopicNames.from(s), meters),
                CdcRelay::isReady, relay -> "slot=" + relay.cfg.slot());
    }

    /**
     * Receives, from now on, per published change, the milliseconds from its commit in PostgreSQL
     * to Kafka's ack.
     */
    public CdcRelay observeLag(LongConsumer observer) {
        this.lagObserver = observer;
        return this;
    }

    /** True while this instance holds the slot's lock and runs the engine. */
    public boolean isActive() {
        return lease.held();
    }

    /**
     * Readiness: active, or a standby that reached PostgreSQL and waits for the lock (both are
     * doing their job); false before the first attempt and while PostgreSQL is unreachable.
     */
    public boolean isReady() {
        return lease.held() || standby;
    }

    /** Changes published to Kafka and acknowledged since start (also the {@code im.cdc.published} meter). */
    public long published() {
        return published.get();
    }

    private boolean stopping() {
        return stop.isDone();
    }

    private void supervise() {
        while (!stopping()) {
            try (Connection lock = LockSession.open(cfg)) {
                long attempt = lease.now();
                if (!LockSession.tryLock(lock, cfg.slot())) {
                    standby = true;
                    pause(STANDBY_POLL);
                    continue;
                }
                standby = false;
                log.info("relay active for slot {} (this instance, {}, holds the lock)", cfg.slot(), instance);
                lease.acquired(attempt);
                // The keeper heartbeats from here until the lock is let go, whatever the engine's state.
                try (LockKeeper keeper = LockKeeper.start(lock, lease, slotWal, cfg.lockTimeout(), cfg.slot())) {
                    runWhileHoldingLock(keeper);
                } finally {
                    lease.lost();
                    slotWal.clear();
                }
            } catch (SQLException e) {
                standby = false;
                log.warn("relay cannot reach PostgreSQL ({}); retrying", e.getMessage());
                pause(RESTART_BACKOFF);
            }
        }
    }

    /**
     * The fence, called before every send: returns while the lease runs. A lapsed lease (a late
     * heartbeat, or this JVM was frozen) waits for the lock keeper's next heartbeat; if it fails,
     * or none succeeds within T, the batch is refused and not marked processed.
     */
    private void requireLease() throws InterruptedException {
        long giveUp = lease.patienceFrom(lease.now());
        while (true) {
            if (stopping()) throw new InterruptedException("relay stopping; batch not published");
            switch (lease.check(giveUp)) {
                case SEND:
                    return;
                case FENCED:
                    throw new InterruptedException("relay does not hold the lock (lost, or no heartbeat within "
                            + cfg.lockTimeout() + "); batch not published");
                default:
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
            }
        }
    }

    /**
     * Runs (and restarts) the engine until stopped or the lock is lost; then returns. The keeper
     * heartbeats the lock session all the while, so nothing here is bounded by the lock timeout.
     */
    private void runWhileHoldingLock(LockKeeper keeper) throws SQLException {
        while (!stopping() && lease.held()) {   // lost when a heartbeat failed, or Kafka fenced this relay
            keeper.call(lock -> {
                LockSession.takeOverSlot(lock, cfg);
                return null;
            });
            try {
                producer = RelayClients.producer(cfg, topics);   // fences an earlier holder's producer at the brokers
            } catch (org.apache.kafka.common.KafkaException e) {
                restarts.incrementAndGet();
                log.warn("relay cannot open its producer ({}); retrying", e.getMessage());
                pause(RESTART_BACKOFF);
                continue;
            }
            engineStarting.run();
            if (!lease.held()) {   // lost meanwhile: an engine now could take the slot from the new holder
                producer.close(Duration.ofSeconds(5));
                return;
            }
            CompletableFuture<Throwable> done = new CompletableFuture<>();
            engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                    .using(RelayClients.engineProperties(cfg, topics, keeper.call(LockSession::server)))
                    .using((success, message, error) ->
                            done.complete(success ? null : error != null ? error : new IllegalStateException(message)))
                    .notifying(this::handleBatch)
                    .build();
            DebeziumEngine<RecordChangeEvent<SourceRecord>> started = engine;
            Thread t = new Thread(() -> {
                // inherited by the engine's threads: ends the change queue's spin (TimerSlack)
                if (!TimerSlack.setForThisThread(TimerSlack.ENGINE_NANOS)) {
                    log.debug("relay cannot set the engine threads' timer slack (not Linux?)");
                }
                started.run();
            }, "relay-engine-" + cfg.slot());
            t.setDaemon(true);
            t.start();
            CompletableFuture.anyOf(done, keeper.lost(), stop).join();   // all three only ever complete normally
            closeEngine();
            producer.close(Duration.ofSeconds(5));
            if (stopping() || !lease.held()) return;
            Throwable err = done.getNow(null);
            restarts.incrementAndGet();
            log.warn("relay engine stopped ({}); restarting", err == null ? "no error" : err.toString());
            pause(RESTART_BACKOFF);
        }
    }

    private void handleBatch(List<RecordChangeEvent<SourceRecord>> batch,
                             DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        List<ProducerRecord<String, String>> out = new ArrayList<>(batch.size());
        List<Long> commitTimes = new ArrayList<>(batch.size());
        for (RecordChangeEvent<SourceRecord> change : batch) {
            SourceRecord r = change.record();
            try {
                Optional<ProducerRecord<String, String>> mapped = mapper.map(r);
                if (mapped.isPresent()) {
                    ProducerRecord<String, String> record = mapped.get();
                    record.headers().add(INSTANCE_HEADER, instanceBytes);
                    out.add(record);
                    commitTimes.add(commitMillis(r));
                }
            } catch (RuntimeException e) {
                // Not an event we can publish (e.g. a manual UPDATE of the append-only events table).
                log.error("relay cannot map change at {}: {}", r.sourceOffset(), e.toString());
            }
        }
        publishUntilAcknowledged(out);
        long now = System.currentTimeMillis();
        for (long t : commitTimes) {
            if (t <= 0) continue;
            lag.record(Math.max(0, now - t), TimeUnit.MILLISECONDS);
            lagObserver.accept(now - t);
        }
        published.addAndGet(out.size());
        for (RecordChangeEvent<SourceRecord> change : batch) committer.markProcessed(change);
        committer.markBatchFinished();
    }

    /** Blocks until Kafka acknowledged every record; retries (re-sending all) until then or stop. */
    private void publishUntilAcknowledged(List<ProducerRecord<String, String>> records) throws InterruptedException {
        if (records.isEmpty()) return;
        while (true) {
            if (stopping()) throw new InterruptedException("relay stopping; batch not marked processed");
            requireLease();
            try {
                producer.beginTransaction();
                List<Future<?>> acks = new ArrayList<>(records.size());
                for (ProducerRecord<String, String> r : records) acks.add(producer.send(r));
                producer.commitTransaction();   // flushes; fails if any record failed
                for (Future<?> f : acks) f.get();
                return;
            } catch (java.util.concurrent.ExecutionException | org.apache.kafka.common.KafkaException e) {
                if (fenced(e)) {
                    // Another relay created the slot's producer after taking the lock: this one lost it.
                    lease.lost();
                    throw new InterruptedException("relay was fenced by a newer relay of slot " + cfg.slot()
                            + " (" + e + "); batch not published");
                }
                log.warn("relay could not publish a batch of {} ({}); retrying, nothing is marked processed",
                        records.size(), e.getMessage());
                producer.close(Duration.ofSeconds(1));
                pause(RESTART_BACKOFF);
                producer = RelayClients.producer(cfg, topics);
            }
        }
    }

    /** Kafka refused this producer because a newer one of the same transactional id exists. */
    private static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) return true;
        }
        return false;
    }

    private static long commitMillis(SourceRecord r) {
        if (!(r.value() instanceof Struct)) return 0;
        Struct v = (Struct) r.value();
        Struct source = v.getStruct("source");
        Object ts = source == null ? null : source.get("ts_ms");
        return ts instanceof Long ? (Long) ts : 0;
    }

    /** Closes the running engine once (close() and the supervisor may both get here). */
    private synchronized void closeEngine() {
        DebeziumEngine<?> e = engine;
        engine = null;
        if (e == null) return;
        try {
            e.close();
        } catch (IOException | RuntimeException ex) {
            log.warn("closing the Debezium engine: {}", ex.toString());
        }
    }

    private void pause(Duration d) {
        try {
            stop.get(d.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            // paused in full
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e);   // cannot happen: stop only completes normally
        }
    }

    @Override
    public void close() {
        stop.complete(null);
        closeEngine();
        try {
            supervisor.join(15_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
