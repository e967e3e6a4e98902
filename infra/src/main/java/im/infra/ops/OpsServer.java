package im.infra.ops;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A role's ops endpoints on a port of their own (the gateway serves the same paths on its main
 * port instead): {@code GET /healthz} is 200 while the process serves HTTP, {@code GET /readyz}
 * is 200 when the role's readiness check passes and 503 otherwise (also when the check throws),
 * {@code GET /metrics} is the registry in the Prometheus text format. Any other path is 404, any
 * other method 405. Requests run on two daemon threads, so a slow readiness check or scrape
 * never touches the role's own threads.
 */
public final class OpsServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(OpsServer.class);

    private final HttpServer server;
    private final ExecutorService executor;
    private final String url;

    /** Serves the ops paths on the bound {@code server} with two daemon threads of its own. */
    private OpsServer(HttpServer server, String host, PrometheusMeterRegistry registry, BooleanSupplier ready) {
        AtomicInteger n = new AtomicInteger();
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "ops-http-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.server = server;
        server.setExecutor(executor);
        server.createContext("/", ex -> handle(ex, registry, ready));
        server.start();
        this.url = "http://" + host + ":" + server.getAddress().getPort();
    }

    /**
     * Binds and starts the server.
     *
     * @param ready the role's readiness check; called once per {@code /readyz} request
     * @throws UncheckedIOException if the address cannot be bound (e.g. the port is taken)
     */
    public static OpsServer start(OpsConfig cfg, PrometheusMeterRegistry registry, BooleanSupplier ready) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(cfg.host(), cfg.port()), 0);
        } catch (IOException e) {
            throw new UncheckedIOException("ops server cannot listen on " + cfg.host() + ":" + cfg.port()
                    + " (set IM_OPS_PORT, 0 = any free port)", e);
        }
        OpsServer ops = new OpsServer(server, cfg.host(), registry, ready);
        log.info("ops endpoints on {}", ops.url());
        return ops;
    }

    private static void handle(HttpExchange ex, PrometheusMeterRegistry registry, BooleanSupplier ready) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (!path.equals("/healthz") && !path.equals("/readyz") && !path.equals("/metrics")) {
                respond(ex, 404, "application/json", "{\"error\":\"NOT_FOUND\"}");
                return;
            }
            String method = ex.getRequestMethod();
            if (!method.equals("GET") && !method.equals("HEAD")) {
                respond(ex, 405, "application/json", "{\"error\":\"METHOD_NOT_ALLOWED\"}");
                return;
            }
            switch (path) {
                case "/healthz":
                    respond(ex, 200, "application/json", "{\"status\":\"ok\"}");
                    break;
                case "/readyz":
                    boolean ok = isReady(ready);
                    respond(ex, ok ? 200 : 503, "application/json", ok ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\"}");
                    break;
                default:
                    respond(ex, 200, Metrics.CONTENT_TYPE, registry.scrape());
            }
        }
    }

    private static boolean isReady(BooleanSupplier ready) {
        try {
            return ready.getAsBoolean();
        } catch (RuntimeException e) {
            log.warn("readiness check failed: {}", e.toString());
            return false;
        }
    }

    private static void respond(HttpExchange ex, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", contentType);
        boolean head = ex.getRequestMethod().equals("HEAD");
        ex.sendResponseHeaders(status, head ? -1 : bytes.length);
        if (!head) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    /** The bound port (useful with {@code IM_OPS_PORT=0}). */
    public int port() {
        return server.getAddress().getPort();
    }

    /** {@code http://host:port}, for banners and logs. */
    public String url() {
        return url;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
