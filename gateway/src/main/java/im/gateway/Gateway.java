package im.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.ops.Metrics;
import im.infra.role.Role;
import im.store.cursor.CursorService;
import im.store.cursor.CursorSink;
import im.store.cursor.CursorWriter;
import im.store.cursor.KafkaCursorSink;
import im.store.cursor.ReadCursors;
import im.store.cursor.ReadWriter;
import im.store.directory.Directory;
import im.store.directory.DirectoryListing;
import im.store.read.ConversationReader;
import im.store.read.MessageReceipts;
import im.store.send.MessageChanges;
import im.store.send.SendService;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.UndertowOptions;
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
import java.util.concurrent.atomic.LongAdder;
import javax.net.ssl.SSLContext;
import javax.sql.DataSource;
import org.xnio.Options;
import org.xnio.Sequence;

/**
 * The gateway role: Undertow serving, on the public listener, {@code /ws} (devices),
 * {@code /api/...} (device-authenticated reads), {@code /} and {@code /app/...} (the web client);
 * and on the admin listener (loopback by default) {@code /admin/...} (admin API),
 * {@code /healthz}, {@code /readyz} and {@code /metrics} (the given Prometheus registry, or a
 * registry of its own). Sends, acks and reads run in-process against PostgreSQL on a bounded
 * worker pool.
 */
public final class Gateway implements AutoCloseable {
    static {
        // Undertow and XNIO log through jboss-logging, which prefers Log4j 2 when it is on the class
        // path, and the embedded Kafka broker brings log4j-core: their messages bypassed Logback (its
        // format, its levels), and every trace check on the I/O threads (several per frame written)
        // went through Log4j's filters, 8 % of the I/O threads' samples at 20,000 pushes/s. Through
        // SLF4J they reach Logback like every other log line. An explicit -Dorg.jboss.logging.provider wins.
        if (System.getProperty("org.jboss.logging.provider") == null) System.setProperty("org.jboss.logging.provider", "slf4j");
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Without Kafka there is no push hub: its meters read this zero (held strongly, as meters hold weakly). */
    private static final AtomicLong NO_PUSHES = new AtomicLong();
    private static final long READY_TTL_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How often the TLS files' modification times are looked at. */
    static final long TLS_RELOAD_SECONDS = 2;

    private final GatewayConfig cfg;
    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private final PrometheusMeterRegistry meters;
    /** The public listener (IM_GATEWAY_PORT) and the admin listener (IM_ADMIN_PORT). */
    private Undertow server;
    private Undertow adminServer;
    private ThreadPoolExecutor workers;
    private SendService sendService;
    private ScheduledExecutorService timers;
    private WebSocketEndpoint endpoint;
    private PushHub push;
    private CursorWriter cursorWriter;
    private ReadWriter readWriter;
    private CursorSink cursorSink;
    private CredentialWatch credentialWatch;
    private ConnectionLimits limits;
    private TlsReload tlsReload;
    /** The last readiness answer and when it was found (see {@link #isReady}). */
    private final Object readyLock = new Object();
    private volatile boolean readyAnswer;
    private volatile long readyCheckedAt = System.nanoTime() - READY_TTL_NANOS;
    /** Readiness checks that asked the database (tests). */
    final AtomicLong readinessChecks = new AtomicLong();

    private Gateway(GatewayConfig cfg, DataSource db, Faults faults, Clock clock, PrometheusMeterRegistry meters) {
        this.cfg = cfg;
        this.db = db;
        this.faults = faults;
        this.clock = clock;
        this.meters = meters;
    }

    /** {@link #start(GatewayConfig, DataSource, Faults, Clock, PrometheusMeterRegistry)} with a registry of its own. */
    public static Gateway start(GatewayConfig cfg, DataSource db, Faults faults, Clock clock) {
        return start(cfg, db, faults, clock, Metrics.newRegistry());
    }

    /**
     * Builds a gateway on the PostgreSQL of {@code db} (migrated already) from {@code cfg} and starts
     * it: its store services, push hub and both listeners. Its meters go to {@code meters} (shared
     * with other roles in {@code im platform}). What started is stopped again when a part fails.
     */
    public static Gateway start(GatewayConfig cfg, DataSource db, Faults faults, Clock clock, PrometheusMeterRegistry meters) {
        Gateway g = new Gateway(cfg, db, faults, clock, meters);
        try {
            return g.startParts();
        } catch (RuntimeException e) {
            g.close();   // what started before the failing part
            throw e;
        }
    }

    /**
     * A gateway as a role ({@code im gateway}): opens its pool on the PostgreSQL of IM_PG_URL,
     * applies the migrations and serves WebSocket and the web client on IM_GATEWAY_PORT, the admin
     * API and its own ops endpoints on IM_ADMIN_PORT. Ready while the database answers; closing
     * stops the gateway, then its pool.
     */
    public static Role<Gateway> role() {
        return new Role<>("gateway", (s, meters) -> {
            GatewayConfig cfg = GatewayConfig.from(s);
            Faults faults = Faults.parse(s.string(ConfigKeys.FAULT));
            Database pool = Database.open(DbConfig.from(s), cfg.gatewayId());
            Gateway gateway;
            try {
                Database.migrate(pool.dataSource());
                gateway = start(cfg, pool.dataSource(), faults, Clock.systemUTC(), meters);
            } catch (RuntimeException e) {
                pool.close();
                throw e;
            }
            return new Role.Running<>(gateway, Gateway::isReady,
                    g -> "port=" + g.port() + " admin=" + g.adminPort() + " id=" + g.id(), true, () -> {
                        gateway.close();
                        pool.close();
                    });
        });
    }

    /** The store services, the push hub and the listeners, in data-path order. */
    private Gateway startParts() {
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
        if (cfg.kafka().isPresent()) push = new PushHub(cfg, clock.millis(), faults).start();
        Directory directory = new Directory(db, clock, cfg.tokenTtl(), cfg.maxGroupMembers());
        ConversationReader reader = new ConversationReader(db);
        // Without a broker (IM_KAFKA_BOOTSTRAP unset) there is no cursor topic to publish to.
        cursorSink = cfg.kafka().<CursorSink>map(k -> new KafkaCursorSink(k, cfg.topics(), "im-cursors-" + cfg.gatewayId()))
                .orElse(CursorSink.NONE);
        cursorWriter = new CursorWriter(new CursorService(db, cursorSink, meters, Tags.of("gateway", cfg.gatewayId())), cfg.ackBatchDelay(), cfg.ackBatchMax(),
                cfg.ackWriters(), cfg.ackThrottle()).start();
        ReadCursors readCursors = new ReadCursors(db, cursorSink);
        readWriter = new ReadWriter(readCursors, cfg.ackBatchDelay(), cfg.ackBatchMax(), cfg.ackWriters(), cfg.readThrottle()).start();
        sendService = new SendService(db, faults, clock, cfg.sendLanes(), cfg.sendBatchMax());
        limits = new ConnectionLimits(cfg);
        Audit audit = new Audit(meters, cfg.gatewayId());
        MessageChanges changes = new MessageChanges(db, faults, clock, cfg.editWindow(), cfg.recallWindow());
        RequestMeters requestMeters = new RequestMeters(meters, cfg.gatewayId());
        TypingPath typing = new TypingPath(push, cfg.typingInterval(), requestMeters, clock);
        FrameDispatcher dispatcher = new FrameDispatcher(directory, sendService, changes, typing,
                cursorWriter, new ReadPath(reader, readCursors, readWriter, push, new MessageReceipts(db)), workers, faults, cfg,
                requestMeters, limits, audit);
        endpoint = new WebSocketEndpoint(dispatcher, cfg, timers, push, limits);
        timers.scheduleWithFixedDelay(() -> limits.prune(System.nanoTime()), 1, 1, TimeUnit.MINUTES);
        credentialWatch = new CredentialWatch(db, endpoint::connections, cfg.installCheck()).start();
        bindMeters();
        // The public listener: what devices and browsers reach.
        PathHandler publicRoutes = Handlers.path()
                .addExactPath("/ws", Handlers.websocket(endpoint))
                .addPrefixPath("/api", new ClientApi(directory, reader, limits, audit))
                .addExactPath("/", hsts(WebApp.index()))
                .addPrefixPath("/app", hsts(WebApp.assets()));
        // The admin listener (IM_ADMIN_HOST, loopback by default): operators and the metrics scraper.
        PathHandler adminRoutes = Handlers.path()
                .addPrefixPath("/admin", new AdminApi(directory, new DirectoryListing(db), changes, cfg.adminTokens(), cfg.adminBulkMax(), limits, audit))
                .addExactPath("/healthz", ex -> AdminApi.respond(ex, 200, JSON.createObjectNode().put("status", "ok")))
                .addExactPath("/readyz", readiness())
                .addExactPath("/metrics", ex -> {
                    if (ex.isInIoThread()) {
                        ex.dispatch(() -> scrape(ex));
                        return;
                    }
                    scrape(ex);
                });
        SSLContext tls = cfg.tlsCert().map(c -> TlsFiles.load(c, cfg.tlsKey().orElseThrow())).orElse(null);
        server = listener(cfg.host(), cfg.port(), "IM_GATEWAY_HOST/IM_GATEWAY_PORT", tls,
                Math.max(2, Runtime.getRuntime().availableProcessors()), 8, publicRoutes);
        adminServer = listener(cfg.adminHost(), cfg.adminPort(), "IM_ADMIN_HOST/IM_ADMIN_PORT", tls, 1, 2, adminRoutes);
        if (tls != null) {
            tlsReload = new TlsReload(cfg.tlsCert().get(), cfg.tlsKey().get(), ctx -> {
                server.getListenerInfo().get(0).setSslContext(ctx);
                adminServer.getListenerInfo().get(0).setSslContext(ctx);
            });
            timers.scheduleWithFixedDelay(tlsReload::check, TLS_RELOAD_SECONDS, TLS_RELOAD_SECONDS, TimeUnit.SECONDS);
        }
        return this;
    }

    /**
     * A started Undertow listener on host:port (HTTPS when {@code tls} is set) with the request
     * timeouts of the settings; one that cannot bind fails naming {@code settings}.
     */
    private Undertow listener(String host, int port, String settings, SSLContext tls, int ioThreads, int workerThreads, HttpHandler routes) {
        Undertow.Builder builder = Undertow.builder()
                .setServerOption(UndertowOptions.REQUEST_PARSE_TIMEOUT, (int) cfg.httpParseTimeout().toMillis())
                .setServerOption(UndertowOptions.NO_REQUEST_TIMEOUT, (int) cfg.httpIdleTimeout().toMillis());
        if (cfg.connSendBuffer() > 0) builder.setSocketOption(Options.SEND_BUFFER, cfg.connSendBuffer());
        if (tls != null) {
            builder.addHttpsListener(port, host, tls)
                    .setSocketOption(Options.SSL_ENABLED_PROTOCOLS, Sequence.of("TLSv1.3", "TLSv1.2"));
        } else {
            builder.addHttpListener(port, host);
        }
        Undertow u = builder.setIoThreads(ioThreads).setWorkerThreads(workerThreads).setHandler(routes).build();
        try {
            u.start();
        } catch (RuntimeException e) {
            throw new IllegalStateException("the gateway cannot listen on " + host + ":" + port + " (" + settings
                    + "; 0 = any free port): " + e.getMessage(), e);
        }
        return u;
    }

    /** With TLS on, the web client's pages tell browsers to use HTTPS only (HSTS, a year). */
    private HttpHandler hsts(HttpHandler next) {
        if (cfg.tlsCert().isEmpty()) return next;
        return ex -> {
            ex.getResponseHeaders().put(new io.undertow.util.HttpString("Strict-Transport-Security"), "max-age=31536000");
            next.handleRequest(ex);
        };
    }

    /** Times the TLS files were reloaded after a change (tests). */
    long tlsReloads() {
        return tlsReload == null ? 0 : tlsReload.reloads.get();
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
        FunctionCounter.builder("im.typing.pushes", p == null ? NO_PUSHES : p.typingPushed, AtomicLong::get)
                .description("typing frames pushed to devices").tag("gateway", cfg.gatewayId()).register(meters);
        FunctionCounter.builder("im.unread.pushes", p == null ? NO_PUSHES : p.readsPushed, AtomicLong::get)
                .description("unread frames pushed to devices: a read on another device of their user").tags(gw).register(meters);
        FunctionCounter.builder("im.interest.digests", p == null ? NO_PUSHES : p.digestsPublished, AtomicLong::get)
                .description("interest digests written (one per partition of the interest topic per interval)").tags(gw).register(meters);
        FunctionCounter.builder("im.interest.resends", p == null ? NO_PUSHES : p.resyncsServed, AtomicLong::get)
                .description("partitions whose registrations were written again because a delivery node or the sweeper asked").tags(gw).register(meters);
        FunctionCounter.builder("im.pushes.dropped", endpoint.outbound.droppedPushes, AtomicLong::get)
                .description("pushes not written: outbound queue full").tags(gw).tag("reason", "queue_full").register(meters);
        FunctionCounter.builder("im.pushes.dropped", p == null ? NO_PUSHES : p.droppedByFault, AtomicLong::get)
                .description("pushes not written: injected fault").tags(gw).tag("reason", "fault").register(meters);
        FunctionCounter.builder("im.acks", cursorWriter, CursorWriter::acks)
                .description("acks received").tags(gw).register(meters);
        FunctionCounter.builder("im.cursor.transactions", cursorWriter, CursorWriter::transactions)
                .description("cursor transactions (batches of acks) committed").tags(gw).register(meters);
        FunctionCounter.builder("im.reads", readWriter, ReadWriter::reads)
                .description("reads received (written or refused)").tags(gw).register(meters);
        FunctionCounter.builder("im.reads.held", readWriter, ReadWriter::held)
                .description("reads that waited for IM_READ_THROTTLE_MS (written with the next write of their user and conversation)").tags(gw).register(meters);
        FunctionCounter.builder("im.read.transactions", readWriter, ReadWriter::transactions)
                .description("read-cursor transactions (batches of reads) committed").tags(gw).register(meters);
        Gauge.builder("im.connections.open", endpoint, WebSocketEndpoint::openConnections)
                .description("open WebSocket connections").tags(gw).register(meters);
        OutboundMeters out = endpoint.outbound;
        Gauge.builder("im.connections.held.bytes", out.heldBytes, LongAdder::sum)
                .description("bytes of frames written to connections that their sockets have not taken yet").tags(gw).register(meters);
        Gauge.builder("im.connections.reading.suspended", out.suspendedNow, AtomicInteger::get)
                .description("connections not read from: over IM_CONN_BUFFER_BYTES").tags(gw).register(meters);
        FunctionCounter.builder("im.connections.suspensions", out.suspensions, AtomicLong::get)
                .description("times a connection reached IM_CONN_BUFFER_BYTES and was not read from").tags(gw).register(meters);
        FunctionCounter.builder("im.connections.closed", out.stallCloses, AtomicLong::get)
                .description("connections closed by the gateway").tags(gw).tag("reason", "slow_consumer").register(meters);
        FunctionCounter.builder("im.connections.closed", endpoint.idleCloses, AtomicLong::get)
                .description("connections closed by the gateway").tags(gw).tag("reason", "idle").register(meters);
        FunctionCounter.builder("im.connections.refused", limits.refusedAddress, AtomicLong::get)
                .description("connections refused for a limit").tags(gw).tag("reason", "address").register(meters);
        FunctionCounter.builder("im.connections.refused", limits.refusedUser, AtomicLong::get)
                .description("connections refused for a limit").tags(gw).tag("reason", "user").register(meters);
        FunctionCounter.builder("im.connections.replaced", limits.replaced, AtomicLong::get)
                .description("connections closed because a newer one of the same device exceeded IM_MAX_CONNECTIONS_PER_DEVICE")
                .tags(gw).register(meters);
        FunctionCounter.builder("im.auth.untracked", limits.untracked, AtomicLong::get)
                .description("failed authentications not counted: the failure table was full").tags(gw).register(meters);
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

    /**
     * Readiness ({@code /readyz}): the database answers. At most one check a second whatever the
     * rate of probes (the answer is up to a second old), each blocking up to two seconds.
     */
    public boolean isReady() {
        if (System.nanoTime() - readyCheckedAt < READY_TTL_NANOS) return readyAnswer;
        synchronized (readyLock) {
            if (System.nanoTime() - readyCheckedAt < READY_TTL_NANOS) return readyAnswer;
            boolean ok;
            try (Connection c = db.getConnection()) {
                ok = c.isValid(2);
            } catch (SQLException e) {
                ok = false;
            }
            readyAnswer = ok;
            readyCheckedAt = System.nanoTime();
            readinessChecks.incrementAndGet();
            return ok;
        }
    }

    /** The public listener's bound port (useful with IM_GATEWAY_PORT=0). */
    public int port() {
        return ((InetSocketAddress) server.getListenerInfo().get(0).getAddress()).getPort();
    }

    /** Partitions of the interest topic this gateway wrote again because a delivery node or the sweeper asked (im_interest_resends). */
    public long pushResends() {
        return push == null ? 0 : push.resyncsServed.get();
    }

    /** The admin listener's bound port (useful with IM_ADMIN_PORT=0). */
    public int adminPort() {
        return ((InetSocketAddress) adminServer.getListenerInfo().get(0).getAddress()).getPort();
    }

    public String id() {
        return cfg.gatewayId();
    }

    public int openConnections() {
        return endpoint.openConnections();
    }

    /** Pushes dropped because a connection's outbound queue was full. */
    public long droppedPushes() {
        return endpoint.outbound.droppedPushes.get();
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

    /** Completed passes of the credential check (see {@link CredentialWatch}). */
    public long credentialChecks() {
        return credentialWatch.passes();
    }

    /** Of those, the passes that read the credentials of every held device (see {@link CredentialWatch#FULL_EVERY}). */
    public long credentialFullChecks() {
        return credentialWatch.fullPasses.get();
    }

    /** Bytes of frames written to connections that their sockets have not taken yet (all connections). */
    public long heldBytes() {
        return endpoint.outbound.heldBytes.sum();
    }

    /** Connections the gateway still has work for (see {@link DeviceConnection#settled}); tests. */
    int unsettledConnections() {
        int n = 0;
        for (DeviceConnection c : endpoint.connections()) if (!c.settled()) n++;
        return n;
    }

    /** How many connections are in each state of their byte accounting, for a test's failure message. */
    String describeConnections() {
        java.util.Map<String, Integer> m = new java.util.TreeMap<>();
        for (DeviceConnection c : endpoint.connections()) m.merge(c.describe(), 1, Integer::sum);
        return m.toString();
    }

    /** Connections not read from now: they hold IM_CONN_BUFFER_BYTES. */
    public int suspendedConnections() {
        return endpoint.outbound.suspendedNow.get();
    }

    /** Connections closed because they stayed over IM_CONN_BUFFER_BYTES for IM_CONN_STALL_MS. */
    public long slowConsumerCloses() {
        return endpoint.outbound.stallCloses.get();
    }

    /** Event frames written to sockets. */
    public long pushed() {
        return push == null ? 0 : push.pushed.get();
    }

    @Override
    public void close() {
        if (credentialWatch != null) credentialWatch.close();
        if (endpoint != null) endpoint.closeAll();
        if (server != null) server.stop();
        if (adminServer != null) adminServer.stop();
        if (push != null) push.close();
        if (cursorWriter != null) cursorWriter.close();
        if (readWriter != null) readWriter.close();
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
