package im.infra.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Every configuration key of every role, with its default and meaning. Values come from the
 * environment (or a JVM system property of the same name, which wins). An {@code IM_*} variable
 * that is not listed here is rejected at start, so a misspelt key cannot be silently ignored.
 */
public final class ConfigKeys {
    private static final List<ConfigKey<?>> ALL = new ArrayList<>();

    private static <T> ConfigKey<T> add(ConfigKey<T> k) {
        ALL.add(k);
        return k;
    }

    private static ConfigKey<String> key(String name, String def, String doc) {
        return add(ConfigKey.text(name, def, doc));
    }

    private static ConfigKey<Integer> key(String name, String def, int min, int max, String doc) {
        return add(ConfigKey.integer(name, def, min, max, doc));
    }

    private static ConfigKey<Duration> ms(String name, String def, long min, long max, String doc) {
        return add(ConfigKey.millis(name, def, min, max, doc));
    }

    // --- PostgreSQL
    public static final ConfigKey<String> PG_URL = key("IM_PG_URL", "",
            "JDBC URL of an external PostgreSQL (wal_level=logical). Empty: start the embedded PostgreSQL. A primary/standby pair: both hosts and targetServerType=primary, e.g. jdbc:postgresql://pg-a:5432,pg-b:5432/im?targetServerType=primary (docs/operations.md).");
    public static final ConfigKey<String> PG_USER = key("IM_PG_USER", "postgres", "PostgreSQL user.");
    public static final ConfigKey<String> PG_PASSWORD = key("IM_PG_PASSWORD", "postgres", "PostgreSQL password.");
    public static final ConfigKey<Integer> PG_POOL_SIZE = key("IM_PG_POOL_SIZE", "16", 1, 200,
            "Connections in each role's pool (1-200). Each in-flight send holds one for its transaction.");
    public static final ConfigKey<String> PG_DATA_DIR = key("IM_PG_DATA_DIR", "var/pg",
            "Embedded PostgreSQL only: data directory (kept across restarts).");
    public static final ConfigKey<Integer> PG_PORT = key("IM_PG_PORT", "15432", 0, 65_535,
            "Embedded PostgreSQL only: port on 127.0.0.1 (0 = any free port).");

    // --- Kafka
    public static final ConfigKey<String> KAFKA_BOOTSTRAP = key("IM_KAFKA_BOOTSTRAP", "",
            "Kafka bootstrap servers. Empty: start the embedded single-node KRaft broker.");
    public static final ConfigKey<String> KAFKA_CONFIG_FILE = key("IM_KAFKA_CONFIG_FILE", "",
            "Java properties file of Kafka client settings (security.protocol, sasl.*, ssl.*, ...) given to every Kafka client of every role and tool (producers, consumers, admin, Kafka Streams, the relay's offset store); read and checked at start. A client's own settings win over it; keys the platform must set itself are refused (docs/security.md).");
    public static final ConfigKey<String> KAFKA_DATA_DIR = key("IM_KAFKA_DATA_DIR", "var/kafka",
            "Embedded Kafka only: log directory (kept across restarts).");
    public static final ConfigKey<Integer> KAFKA_PORT = key("IM_KAFKA_PORT", "19092", 0, 65_534,
            "Embedded Kafka only: client port on 127.0.0.1 (the controller uses the next port; 0 = any free ports).");
    public static final ConfigKey<Integer> PARTITIONS = key("IM_PARTITIONS", "8", 1, 10_000,
            "Partitions of every conversation-keyed topic (events, cursors, interest); one count for all so they are co-partitioned.");
    public static final ConfigKey<String> TOPIC_PREFIX = key("IM_TOPIC_PREFIX", "im.",
            "Prefix of every topic name, e.g. im.events.");
    public static final ConfigKey<Integer> REPLICATION_FACTOR = key("IM_REPLICATION_FACTOR", "1", 1, 32_767,
            "Replicas of every topic the platform creates (shared topics, gateway channels, relay offsets, Kafka Streams internal topics), with min.insync.replicas one less (at least 1); 3 on a replicated cluster (see docs/operations.md). More than the cluster's registered brokers is refused at start.");

    // --- CDC relay
    public static final ConfigKey<String> RELAY_SLOT = key("IM_RELAY_SLOT", "im_relay",
            "CDC relay: replication slot and publication name (created if missing, never dropped). One active relay per slot.");
    public static final ConfigKey<Duration> RELAY_POLL_MS = ms("IM_RELAY_POLL_MS", "7", 1, 10_000,
            "CDC relay: Debezium poll.interval.ms. Lower = less commit-to-Kafka lag, more idle CPU (7 ms: ~7 ms p50 lag at low load; the idle platform uses ~10% of a core, about 3 points of it the relay waking every interval; docs/benchmarks.md).");
    public static final ConfigKey<Duration> RELAY_OFFSET_FLUSH_MS = ms("IM_RELAY_OFFSET_FLUSH_MS", "1000", 100, 600_000,
            "CDC relay: how often published positions are committed (and the slot advanced). Lower = fewer duplicates replayed after a crash.");

    public static final ConfigKey<Duration> RELAY_LOCK_TIMEOUT_MS = ms("IM_RELAY_LOCK_TIMEOUT_MS", "5000", 1000, 600_000,
            "CDC relay: the active relay heartbeats its lock session every fifth of this; PostgreSQL ends a session idle this long (idle_session_timeout, PostgreSQL 14+), so a frozen relay (SIGSTOP, stalled VM) loses the lock and a standby takes over within about this plus 5 s. The relay itself stops publishing once half of it passed without a heartbeat. 1000-600000.");

    // --- Gateway
    public static final ConfigKey<String> GATEWAY_HOST = key("IM_GATEWAY_HOST", "127.0.0.1",
            "Address the gateway's HTTP/WebSocket listener binds to.");
    public static final ConfigKey<Integer> GATEWAY_PORT = key("IM_GATEWAY_PORT", "8080", 0, 65_535,
            "Port of the gateway's public listener: WebSocket, device HTTP API and web client (0 = any free port; the chosen port is logged).");
    public static final ConfigKey<String> ADMIN_HOST = key("IM_ADMIN_HOST", "127.0.0.1",
            "Address the gateway's admin listener (/admin API, /healthz, /readyz, /metrics) binds to: loopback by default, so that only this host reaches it; in a container, the address of a network that only operators and the metrics scraper reach (docs/security.md).");
    public static final ConfigKey<Integer> ADMIN_PORT = key("IM_ADMIN_PORT", "8081", 0, 65_535,
            "Port of the gateway's admin listener (0 = any free port). It serves TLS too when IM_TLS_CERT is set.");
    public static final ConfigKey<String> GATEWAY_ID = key("IM_GATEWAY_ID", "",
            "Stable name of this gateway (routes and metrics). Empty: gw-<random>.");
    public static final ConfigKey<String> ADMIN_TOKEN = key("IM_ADMIN_TOKEN", "",
            "Bearer token(s) that protect the admin HTTP API: one, or several separated by commas to rotate without downtime; each at least 16 characters and 128 bits by the rule in docs/security.md (e.g. openssl rand -hex 24). Required by the gateway role.");
    public static final ConfigKey<Integer> ADMIN_BULK_MAX = key("IM_ADMIN_BULK_MAX", "10000", 1, 100_000,
            "Items one bulk admin request may carry: users (POST /admin/users/bulk), devices (POST /admin/devices/bulk), members (POST /admin/conversations and /admin/conversations/{conv}/members); its body may be up to 256 bytes per item (1-100000).");
    public static final ConfigKey<Integer> WORKER_THREADS = key("IM_WORKER_THREADS", "32", 1, 1024,
            "Gateway threads that run database work for frames (1-1024).");
    public static final ConfigKey<Integer> MAX_INFLIGHT = key("IM_MAX_INFLIGHT", "64", 1, 10_000,
            "Requests one connection may have in flight; more are answered RATE_LIMITED (1-10000).");
    public static final ConfigKey<Integer> RATE_LIMIT = key("IM_RATE_LIMIT", "500", 1, 1_000_000,
            "Frames per second one connection may send (token bucket, burst = 2x); over it: RATE_LIMITED (1-1000000).");
    public static final ConfigKey<Duration> AUTH_TIMEOUT_MS = ms("IM_AUTH_TIMEOUT_MS", "10000", 100, 600_000,
            "A connection that has not authenticated within this time is closed.");
    public static final ConfigKey<Duration> TOKEN_TTL_S = add(ConfigKey.seconds("IM_TOKEN_TTL_S", "2592000", 0, 100L * 365 * 86_400,
            "Lifetime in seconds of a device token issued by registration, reinstall or renewal (default 30 days; 0 = never expires). An expired token is answered BAD_TOKEN, and a session opened with it ends at the expiry (4001)."));
    public static final ConfigKey<Duration> EDIT_WINDOW_S = add(ConfigKey.seconds("IM_EDIT_WINDOW_S", "86400", 0, 100L * 365 * 86_400,
            "How long after it was sent a message may be edited by its sender, in seconds (default 1 day; 0 = no edits). Later edits are refused TOO_LATE."));
    public static final ConfigKey<Duration> RECALL_WINDOW_S = add(ConfigKey.seconds("IM_RECALL_WINDOW_S", "86400", 0, 100L * 365 * 86_400,
            "How long after it was sent a message may be recalled by its sender, in seconds (default 1 day; 0 = no recalls). Later recalls are refused TOO_LATE."));
    public static final ConfigKey<Integer> MAX_GROUP_MEMBERS = key("IM_MAX_GROUP_MEMBERS", "100000", 2, 10_000_000,
            "Most current members of a group conversation; adding one more is refused with GROUP_FULL (2-10000000). A create request lists at most 1,000 initial members.");
    public static final ConfigKey<Duration> INSTALL_CHECK_MS = ms("IM_INSTALL_CHECK_MS", "1000", 100, 1000,
            "How often a gateway reads the devices whose credentials changed since its last look and closes the connections it holds of them: 4003 after a reinstall, 4001 after a token renewal or revocation (100-1000; a change reaches open sockets within this plus one query; every 60th pass also reads every held device's credentials).");
    public static final ConfigKey<Integer> OUTBOUND_QUEUE = key("IM_OUTBOUND_QUEUE", "1024", 1, 1_000_000,
            "Frames queued per connection for writing; pushes beyond it are dropped (counted) and repaired by sync/hints.");

    public static final ConfigKey<Integer> CONN_BUFFER_BYTES = key("IM_CONN_BUFFER_BYTES", "262144", 16_384, 67_108_864,
            "Bytes of frames (replies and pushes) the gateway holds for one connection before it stops reading from it "
            + "and drops pushes to it; reading resumes when half has drained (16384-67108864). See docs/security.md.");
    public static final ConfigKey<Integer> CONN_SEND_BUFFER_BYTES = key("IM_CONN_SEND_BUFFER_BYTES", "0", 0, 16_777_216,
            "Kernel send buffer (SO_SNDBUF) of each gateway socket; 0 leaves it to the kernel's autotuning, which may grow "
            + "it to net.ipv4.tcp_wmem's maximum (0-16777216).");
    public static final ConfigKey<Duration> CONN_STALL_MS = ms("IM_CONN_STALL_MS", "60000", 1_000, 3_600_000,
            "A connection whose held frames stay over IM_CONN_BUFFER_BYTES this long is closed (status 4008).");

    public static final ConfigKey<Integer> MAX_CONNECTIONS_PER_ADDRESS = key("IM_MAX_CONNECTIONS_PER_ADDRESS", "10000", 1, 1_000_000,
            "WebSocket connections one remote address may hold on a gateway; one more is closed at once (1013) (behind a proxy all come from the proxy's address) (1-1000000).");
    public static final ConfigKey<Integer> MAX_CONNECTIONS_PER_USER = key("IM_MAX_CONNECTIONS_PER_USER", "64", 1, 100_000,
            "Authenticated connections one user may hold on a gateway; one more is refused RATE_LIMITED and closed (1013) (1-100000).");
    public static final ConfigKey<Integer> MAX_CONNECTIONS_PER_DEVICE = key("IM_MAX_CONNECTIONS_PER_DEVICE", "4", 1, 1_000,
            "Authenticated connections one device may hold on a gateway; one more replaces the oldest, which is closed (4009) (1-1000).");
    public static final ConfigKey<Integer> AUTH_FAILURES_PER_MINUTE = key("IM_AUTH_FAILURES_PER_MINUTE", "30", 1, 100_000,
            "Failed authentications one remote address may make per minute (token bucket); beyond, its authentications are refused RATE_LIMITED without a database lookup (1-100000).");
    public static final ConfigKey<Duration> WS_IDLE_MS = ms("IM_WS_IDLE_MS", "120000", 5_000, 3_600_000,
            "An authenticated WebSocket from which nothing (not even a pong) arrived this long is closed (1001); the gateway pings every connection every third of it.");
    public static final ConfigKey<Duration> HTTP_PARSE_TIMEOUT_MS = ms("IM_HTTP_PARSE_TIMEOUT_MS", "10000", 100, 600_000,
            "Time a client may take to send a whole HTTP request header; a slower connection is closed.");
    public static final ConfigKey<Duration> HTTP_IDLE_TIMEOUT_MS = ms("IM_HTTP_IDLE_TIMEOUT_MS", "60000", 1_000, 3_600_000,
            "Time a kept-alive HTTP connection may wait for its next request before it is closed.");

    public static final ConfigKey<String> TLS_CERT = key("IM_TLS_CERT", "",
            "PEM file of the gateway's certificate chain; with IM_TLS_KEY the gateway serves HTTPS and WSS only (TLS 1.2 and 1.3), and reloads both files when they change.");
    public static final ConfigKey<String> TLS_KEY = key("IM_TLS_KEY", "",
            "PEM file of the private key of IM_TLS_CERT (PKCS#8: BEGIN PRIVATE KEY; RSA or EC).");
    public static final ConfigKey<String> CA_FILE = key("IM_CA_FILE", "",
            "CLI (send, edit, recall, receipts, typing, tail, read, unread): PEM file of the CA certificates to trust for an https:// or wss:// --gateway instead of the JVM's trust store (what --ca-file sets; ignored for http://).");

    public static final ConfigKey<Integer> SEND_LANES = key("IM_SEND_LANES", "2", 0, 256,
            "Group commit: threads that commit sends, each owning the conversations that hash to it; concurrent sends of a lane commit in one transaction (0 = one transaction per send on the worker thread; 0-256).");
    public static final ConfigKey<Integer> SEND_BATCH_MAX = key("IM_SEND_BATCH_MAX", "64", 1, 10_000,
            "Group commit: most sends in one transaction (1-10000).");

    // --- Cursor service
    public static final ConfigKey<Duration> ACK_BATCH_MS = ms("IM_ACK_BATCH_MS", "2", 0, 100,
            "Acks arriving within this many ms of the first are validated and written in one transaction (0-100).");
    public static final ConfigKey<Integer> ACK_BATCH_MAX = key("IM_ACK_BATCH_MAX", "256", 1, 10_000,
            "Most acks in one cursor transaction (1-10000).");
    public static final ConfigKey<Integer> ACK_WRITERS = key("IM_ACK_WRITERS", "2", 1, 64,
            "Threads that write cursor transactions, each holding a pool connection while it writes, and as many again for read cursors (1-64; keep twice it below IM_PG_POOL_SIZE).");
    public static final ConfigKey<Duration> TYPING_INTERVAL_MS = ms("IM_TYPING_INTERVAL_MS", "2000", 0, 60_000,
            "Least time between two typing frames of one connection and conversation that are passed on; the ones in between are dropped (counted in im_typing_total{outcome=\"throttled\"}; 0 = no throttle; 0-60000).");
    public static final ConfigKey<Duration> ACK_THROTTLE_MS = ms("IM_ACK_THROTTLE_MS", "400", 0, 5_000,
            "Least time between two cursor writes of one (device, conversation): the first ack after a quiet spell is written at once, later ones wait together for the rest of the interval (0 = no throttle; 0-5000; keep it well below IM_SWEEP_MS).");
    public static final ConfigKey<Duration> READ_THROTTLE_MS = ms("IM_READ_THROTTLE_MS", "500", 0, 5_000,
            "Least time between two read-cursor writes of one (user, conversation): the first read after a quiet spell is written at once, later ones (from any of the user's devices) wait together for the rest of the interval and are answered then (0 = no throttle; 0-5000). Reads are batched like acks (IM_ACK_BATCH_MS, IM_ACK_BATCH_MAX).");

    // --- Delivery
    public static final ConfigKey<Duration> GATEWAY_HEARTBEAT_MS = ms("IM_GATEWAY_HEARTBEAT_MS", "2000", 100, 60_000,
            "How often a gateway announces it is alive on the gateways topic.");
    public static final ConfigKey<Duration> GATEWAY_LEASE_MS = ms("IM_GATEWAY_LEASE_MS", "10000", 1000, 600_000,
            "Delivery nodes and the sweeper skip the routes of a gateway not heard from for this long (its entries come back when it heartbeats again; entries of a restarted or long-gone gateway are removed).");
    public static final ConfigKey<Duration> INTEREST_RENEW_MS = ms("IM_INTEREST_RENEW_MS", "2000", 200, 600_000,
            "How often a gateway writes, per partition of the interest topic, a digest of the registrations it holds there (registrations are not renewed one by one); two disagreeing digests in a row make a delivery node or the sweeper ask for the partition again, so a lost registration is repaired within about three intervals. Withdrawals, and registrations of a gateway silent for 6 intervals + the gateway lease, are removed. Same value for gateways, delivery nodes and sweepers.");
    public static final ConfigKey<String> STATE_DIR = key("IM_STATE_DIR", "",
            "Kafka Streams state directory of a delivery node or sweeper. Empty: a fresh temporary directory per start.");

    // --- Sweeper
    public static final ConfigKey<Duration> SWEEP_MS = ms("IM_SWEEP_MS", "1000", 10, 600_000,
            "Sweeper: how often lagging (device, conversation) pairs are checked, and how long a cursor may stay behind the head before a hint (plus IM_ACK_THROTTLE_MS, which the sweeper reads too: a throttled cursor reaches it that much later).");
    public static final ConfigKey<Duration> HINT_BACKOFF_MS = ms("IM_HINT_BACKOFF_MS", "2000", 0, 3_600_000,
            "Sweeper: a device that keeps lagging in a conversation is hinted again no sooner than this; the wait doubles with every further hint of the same lagging spell, up to 16 times this.");

    // --- Operations
    public static final ConfigKey<String> JAVA_OPTS = key("IM_JAVA_OPTS", "",
            "JVM options the ./im script passes to java (e.g. -Xmx4g); read by the script, not by the roles, and accepted here so that a role started by ./im does not refuse it as unknown.");
    public static final ConfigKey<String> OPS_HOST = key("IM_OPS_HOST", "127.0.0.1",
            "Address the ops HTTP server (/healthz, /readyz, /metrics) of the relay, delivery, sweeper and platform roles binds to (the gateway serves them on its admin listener).");
    public static final ConfigKey<Integer> OPS_PORT = key("IM_OPS_PORT", "9090", 0, 65_535,
            "Port of that ops server (0 = any free port). The gateway role serves the same paths on its admin listener (IM_ADMIN_PORT) instead.");

    // --- Fault injection (tests only)
    public static final ConfigKey<String> FAULT = key("IM_FAULT", "",
            "Fault injection for tests, off when empty. Comma-separated rules: <point>:halt (Runtime.halt(137)), "
                    + "<point>:drop[:skip[:count]] or <point>:fail[:skip[:count]] (throws: INTERNAL; send.before_insert only). Points: "
                    // Spelled out, not read from FaultPoint: config sits below fault (FaultsTest keeps the two equal).
                    + "send.before_insert, send.before_commit, send.batch_before_commit, api.after_send_commit, "
                    + "gw.reply.send, gw.reply.ack, gw.ack, gw.push, gw.interest.");

    // --- Tests
    public static final ConfigKey<String> STACK = key("IM_STACK", "embedded",
            "Tests only: 'embedded' (default) or 'containers' (PostgreSQL and Kafka in Testcontainers; needs Docker, or podman through ops/test-containers.sh).");

    private ConfigKeys() {}

    /** Every key, in declaration order. */
    public static List<ConfigKey<?>> all() {
        return Collections.unmodifiableList(ALL);
    }

    public static boolean isKnown(String name) {
        for (ConfigKey<?> k : ALL) {
            if (k.name().equals(name)) return true;
        }
        return false;
    }
}
