package im.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import im.cursor.CursorService;
import im.cursor.CursorSink;
import im.cursor.CursorWriter;
import im.cursor.KafkaCursorSink;
import im.infra.fault.Faults;
import im.infra.ops.Metrics;
import im.ingest.SendService;
import im.ingest.directory.Directory;
import im.ingest.directory.DirectoryListing;
import im.read.ConversationReader;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.server.HttpHandler;
import io.undertow.server.handlers.PathHandler;
import io.undertow.util.Headers;
import java.net.InetSocketAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The gateway role: Undertow serving {@code /ws} (devices), {@code /admin/...} (admin API),
 * {@code /api/...} (device-authenticated reads), {@code /} and {@code /app/...} (the web client),
 * {@code /healthz}, {@code /readyz} and {@code /metrics} (the given Prometheus registry, or a
 * registry of its own). Sends, acks and reads run in-process against PostgreSQL on a bounded
 * worker pool.
 */
public final class Gateway implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Without Kafka there is no push hub: its meters read this zero (held strongly, as meters hold weakly). */
    private static final AtomicLong NO_PUSHES = new AtomicLong();

    private final GatewayConfig cfg;
    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private final PrometheusMeterRegistry meters;
    private Undertow server;
    private ThreadPoolExecutor workers;
    private SendService sendService;
    private ScheduledExecutorService timers;
    private WebSocketEndpoint endpoint;
    private PushHub push;
    private CursorWriter cursorWriter;
    private CursorSink cursorSink;
    private InstallWatch installWatch;

    public Gateway(GatewayConfig cfg, DataSource db, Faults faults, Clock clock) {
        this(cfg, db, faults, clock, Metrics.newRegistry());
    }

    /** A gateway whose meters go to {@code meters} (shared with other roles in {@code im platform}). */
    public Gateway(GatewayConfig cfg, DataSource db, Faults faults, Clock clock, PrometheusMeterRegistry meters) {
        this.cfg = cfg;
        this.db = db;
        this.faults = faults;
        this.clock = clock;
        this.meters = meters;
    }

    public Gateway start() {
        AtomicInteger n = new AtomicInteger();
        workers = new ThreadPoolExecutor(cfg.workerThreads(), cfg.workerThreads(), 60, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(10_000), r -> {
                    Thread t = new Thread(r, "gw-worker-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        timers = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gw-timer");
            t.setDaemon(true);
            return t;
        });
        if (cfg.kafkaBootstrap().isPresent()) {
            try {
                push = new PushHub(cfg, clock.millis(), faults).start();
            } catch (RuntimeException e) {
                workers.shutdownNow();
                timers.shutdownNow();
                throw e;
            }
        }
        Directory directory = new Directory(db, clock, cfg.tokenTtl(), cfg.maxGroupMembers());
        // Without a broker (IM_KAFKA_BOOTSTRAP unset) there is no cursor topic to publish to.
        cursorSink = cfg.kafkaBootstrap().<CursorSink>map(b -> new KafkaCursorSink(b, cfg.topics(), "im-cursors-" + cfg.gatewayId()))
                .orElse(CursorSink.NONE);
        cursorWriter = new CursorWriter(new CursorService(db, cursorSink, meters, Tags.of("gateway", cfg.gatewayId())), cfg.ackBatchDelay(), cfg.ackBatchMax(), 2,
                cfg.ackThrottle()).start();
        sendService = new SendService(db, faults, clock, cfg.sendLanes(), cfg.sendBatchMax());
        FrameDispatcher dispatcher = new FrameDispatcher(directory, sendService,
                cursorWriter, new ReadPath(new ConversationReader(db), push), workers, faults, cfg,
                new RequestMeters(meters, cfg.gatewayId()));
        endpoint = new WebSocketEndpoint(dispatcher, cfg, timers, push);
        installWatch = new InstallWatch(db, endpoint::connections, cfg.installCheck()).start();
        bindMeters();
        PathHandler routes = Handlers.path()
                .addExactPath("/ws", Handlers.websocket(endpoint))
                .addPrefixPath("/admin", new AdminApi(directory, new DirectoryListing(db), cfg.adminToken()))
                .addPrefixPath("/api", new ClientApi(directory, new ConversationReader(db)))
                .addExactPath("/", WebApp.index())
                .addPrefixPath("/app", WebApp.assets())
                .addExactPath("/healthz", ex -> AdminApi.respond(ex, 200, JSON.createObjectNode().put("status", "ok")))
                .addExactPath("/readyz", readiness())
                .addExactPath("/metrics", ex -> {
                    if (ex.isInIoThread()) {
                        ex.dispatch(() -> scrape(ex));
                        return;
                    }
                    scrape(ex);
                });
        server = Undertow.builder()
                .addHttpListener(cfg.port(), cfg.host())
                .setIoThreads(Math.max(2, Runtime.getRuntime().availableProcessors()))
                .setWorkerThreads(8)
                .setHandler(routes)
                .build();
        server.start();
        return this;
    }

    private void scrape(io.undertow.server.HttpServerExchange ex) {
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, Metrics.CONTENT_TYPE);
        ex.getResponseSender().send(meters.scrape());
    }

    /** Counters the components already keep, exposed as meters (read at scrape time). */
    private void bindMeters() {
        Tags gw = Tags.of("gateway", cfg.gatewayId());
        PushHub p = push;
        FunctionCounter.builder("im.pushes", p == null ? NO_PUSHES : p.pushed, AtomicLong::get)
                .description("event frames pushed to devices").tags(gw).register(meters);
        FunctionCounter.builder("im.hints.delivered", p == null ? NO_PUSHES : p.hintsDelivered, AtomicLong::get)
                .description("hint frames pushed to devices").tags(gw).register(meters);
        FunctionCounter.builder("im.pushes.dropped", endpoint.droppedPushes, AtomicLong::get)
                .description("pushes not written: outbound queue full").tags(gw).tag("reason", "queue_full").register(meters);
        FunctionCounter.builder("im.pushes.dropped", p == null ? NO_PUSHES : p.droppedByFault, AtomicLong::get)
                .description("pushes not written: injected fault").tags(gw).tag("reason", "fault").register(meters);
        FunctionCounter.builder("im.acks", cursorWriter, CursorWriter::acks)
                .description("acks received").tags(gw).register(meters);
        FunctionCounter.builder("im.cursor.transactions", cursorWriter, CursorWriter::transactions)
                .description("cursor transactions (batches of acks) committed").tags(gw).register(meters);
        Gauge.builder("im.connections.open", endpoint, WebSocketEndpoint::openConnections)
                .description("open WebSocket connections").tags(gw).register(meters);
    }

    private HttpHandler readiness() {
        return new HttpHandler() {
            @Override
            public void handleRequest(io.undertow.server.HttpServerExchange ex) {
                if (ex.isInIoThread()) {
                    ex.dispatch(this);
                    return;
                }
                boolean ok = isReady();
                AdminApi.respond(ex, ok ? 200 : 503, JSON.createObjectNode().put("status", ok ? "ready" : "database unavailable"));
            }
        };
    }

    /** Readiness ({@code /readyz}): the database answers. Blocks up to two seconds. */
    public boolean isReady() {
        try (Connection c = db.getConnection()) {
            return c.isValid(2);
        } catch (SQLException e) {
            return false;
        }
    }

    /** The bound port (useful with IM_GATEWAY_PORT=0). */
    public int port() {
        return ((InetSocketAddress) server.getListenerInfo().get(0).getAddress()).getPort();
    }

    public String id() {
        return cfg.gatewayId();
    }

    public int openConnections() {
        return endpoint.openConnections();
    }

    /** Pushes dropped because a connection's outbound queue was full. */
    public long droppedPushes() {
        return endpoint.droppedPushes.get();
    }

    /** {@code im.acked.latency}: ack frame received to acked reply written (for benchmarks; also on /metrics). */
    public Timer ackedLatency() {
        return meters.get("im.acked.latency").tag("gateway", cfg.gatewayId()).timer();
    }

    /** Acks received, and the cursor transactions that wrote them (batches). */
    public long acksReceived() {
        return cursorWriter.acks();
    }

    public long cursorTransactions() {
        return cursorWriter.transactions();
    }

    /** Completed passes of the install check (see {@link InstallWatch}). */
    public long installChecks() {
        return installWatch.passes();
    }

    /** Of those, the passes that read the epoch of every held device (see {@link InstallWatch#FULL_EVERY}). */
    public long installFullChecks() {
        return installWatch.fullPasses.get();
    }

    /** Event frames written to sockets. */
    public long pushed() {
        return push == null ? 0 : push.pushed.get();
    }

    @Override
    public void close() {
        if (installWatch != null) installWatch.close();
        if (endpoint != null) endpoint.closeAll();
        if (server != null) server.stop();
        if (push != null) push.close();
        if (cursorWriter != null) cursorWriter.close();
        if (cursorSink != null) cursorSink.close();   // after the writer: its last batches publish first
        if (workers != null) {
            workers.shutdown();
            try {
                if (!workers.awaitTermination(5, TimeUnit.SECONDS)) workers.shutdownNow();
            } catch (InterruptedException e) {
                workers.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        if (sendService != null) sendService.close();   // after the workers: none waits on a lane now
        if (timers != null) timers.shutdownNow();
    }
}
