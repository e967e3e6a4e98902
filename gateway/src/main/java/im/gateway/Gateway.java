package im.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import im.cursor.CursorService;
import im.cursor.CursorWriter;
import im.delivery.read.ConversationReader;
import im.infra.fault.Faults;
import im.ingest.SendService;
import im.ingest.directory.Directory;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.server.HttpHandler;
import io.undertow.server.handlers.PathHandler;
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
import javax.sql.DataSource;

/**
 * The gateway role: Undertow serving {@code /ws} (devices), {@code /admin/...} (admin API),
 * {@code /healthz} and {@code /readyz}. Sends, acks and reads run in-process against PostgreSQL
 * on a bounded worker pool.
 */
public final class Gateway implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final GatewayConfig cfg;
    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private Undertow server;
    private ThreadPoolExecutor workers;
    private ScheduledExecutorService timers;
    private WebSocketEndpoint endpoint;
    private PushHub push;
    private CursorWriter cursorWriter;

    public Gateway(GatewayConfig cfg, DataSource db, Faults faults, Clock clock) {
        this.cfg = cfg;
        this.db = db;
        this.faults = faults;
        this.clock = clock;
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
            push = new PushHub(cfg.kafkaBootstrap().get(), cfg.topics(), cfg.gatewayId(), clock.millis(),
                    cfg.heartbeat(), faults).start(cfg.partitions());
        }
        Directory directory = new Directory(db, clock);
        cursorWriter = new CursorWriter(new CursorService(db), cfg.ackBatchDelay(), cfg.ackBatchMax(), 2).start();
        FrameDispatcher dispatcher = new FrameDispatcher(directory, new SendService(db, faults, clock),
                cursorWriter, new ReadPath(new ConversationReader(db), push), workers, faults, cfg);
        endpoint = new WebSocketEndpoint(dispatcher, cfg, timers, push);
        PathHandler routes = Handlers.path()
                .addExactPath("/ws", Handlers.websocket(endpoint))
                .addPrefixPath("/admin", new AdminApi(directory, cfg.adminToken()))
                .addExactPath("/healthz", ex -> AdminApi.respond(ex, 200, JSON.createObjectNode().put("status", "ok")))
                .addExactPath("/readyz", readiness());
        server = Undertow.builder()
                .addHttpListener(cfg.port(), cfg.host())
                .setIoThreads(Math.max(2, Runtime.getRuntime().availableProcessors()))
                .setWorkerThreads(8)
                .setHandler(routes)
                .build();
        server.start();
        return this;
    }

    private HttpHandler readiness() {
        return new HttpHandler() {
            @Override
            public void handleRequest(io.undertow.server.HttpServerExchange ex) {
                if (ex.isInIoThread()) {
                    ex.dispatch(this);
                    return;
                }
                try (Connection c = db.getConnection()) {
                    boolean ok = c.isValid(2);
                    AdminApi.respond(ex, ok ? 200 : 503, JSON.createObjectNode().put("status", ok ? "ready" : "database unavailable"));
                } catch (SQLException e) {
                    AdminApi.respond(ex, 503, JSON.createObjectNode().put("status", "database unavailable"));
                }
            }
        };
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

    /** Acks received, and the cursor transactions that wrote them (batches). */
    public long acksReceived() {
        return cursorWriter.acks();
    }

    public long cursorTransactions() {
        return cursorWriter.transactions();
    }

    /** Event frames written to sockets. */
    public long pushed() {
        return push == null ? 0 : push.pushed.get();
    }

    @Override
    public void close() {
        if (endpoint != null) endpoint.closeAll();
        if (server != null) server.stop();
        if (push != null) push.close();
        if (cursorWriter != null) cursorWriter.close();
        if (workers != null) {
            workers.shutdown();
            try {
                if (!workers.awaitTermination(5, TimeUnit.SECONDS)) workers.shutdownNow();
            } catch (InterruptedException e) {
                workers.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        if (timers != null) timers.shutdownNow();
    }
}
