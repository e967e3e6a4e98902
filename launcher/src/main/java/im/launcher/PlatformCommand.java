package im.launcher;

import im.delivery.route.DeliveryNode;
import im.embedded.EmbeddedKafkaBroker;
import im.embedded.EmbeddedPg;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.infra.ops.Metrics;
import im.infra.ops.OpsConfig;
import im.infra.ops.OpsServer;
import im.infra.role.Closer;
import im.infra.role.Role;
import im.store.directory.DeviceRegistration;
import im.store.directory.Directory;
import im.store.directory.DirectoryException;
import im.relay.CdcRelay;
import im.sweeper.Sweeper;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code im platform}: the whole platform on one machine. Starts the embedded
 * PostgreSQL and Kafka broker (unless external ones are configured), applies migrations, creates
 * the topics, starts every role, and optionally a demo pair of users in one conversation. By
 * default every role runs in this JVM and records into one meter registry, served on the ops port
 * (IM_OPS_PORT) and on the gateway's admin listener (IM_ADMIN_PORT). With {@code --processes} each
 * role runs in its own JVM ({@link RoleProcesses}), like the compose stack: gateways on consecutive
 * ports from IM_GATEWAY_PORT with their admin listeners on consecutive ports from IM_ADMIN_PORT, the
 * other roles' ops servers on consecutive ports after IM_OPS_PORT.
 */
@Command(name = "platform", mixinStandardHelpOptions = true,
        description = "Run the whole platform on this machine with embedded PostgreSQL and Kafka (data under var/): "
                + "every role in this process, or with --processes each role in its own process.")
final class PlatformCommand implements Callable<Integer>, RoleCommand {
    /** What the banner shows for the admin token: the token itself only with --demo. */
    private String adminTokenShown;

    /**
     * Writes a generated admin token to {@code admin-token} beside the database's data directory,
     * readable by its owner only, and returns what the banner says instead of the secret.
     */
    private static String saveAdminToken(Settings s) throws java.io.IOException {
        java.nio.file.Path dir = java.nio.file.Path.of(s.string(ConfigKeys.PG_DATA_DIR)).toAbsolutePath().getParent();
        java.nio.file.Files.createDirectories(dir);
        java.nio.file.Path file = dir.resolve("admin-token");
        java.nio.file.Files.deleteIfExists(file);
        java.nio.file.Files.createFile(file, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        java.nio.file.Files.writeString(file, s.string(ConfigKeys.ADMIN_TOKEN) + "\n");
        return "$(cat " + file + ")";
    }

    @Option(names = "--demo", description = "Create users u-ana and u-bo, one device each, and conversation c-ab; print their tokens.")
    boolean demo;

    @Option(names = "--processes", description = "Run each role in its own JVM (like the compose stack) instead of in this one.")
    boolean processes;

    @Option(names = "--gateways", paramLabel = "N", description = "With --processes: gateways to start, on consecutive ports from IM_GATEWAY_PORT (default ${DEFAULT-VALUE}).")
    int gateways = 2;

    @Option(names = "--delivery-nodes", paramLabel = "N", description = "With --processes: delivery nodes to start (default ${DEFAULT-VALUE}).")
    int deliveryNodes = 2;

    @Option(names = "--relays", paramLabel = "N", description = "With --processes: CDC relays to start, one active and the others standby (default ${DEFAULT-VALUE}).")
    int relays = 2;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--exit-after-start", description = "Start everything, print where to connect, stop again (a smoke test).")
    boolean exitAfterStart;

    private final Closer started = new Closer();

    @Override
    public Integer call() throws Exception {
        if (!processes && spec != null && (spec.commandLine().getParseResult().hasMatchedOption("--gateways")
                || spec.commandLine().getParseResult().hasMatchedOption("--delivery-nodes")
                || spec.commandLine().getParseResult().hasMatchedOption("--relays"))) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--gateways, --delivery-nodes and --relays need --processes");
        }
        for (int n : List.of(gateways, deliveryNodes, relays)) {
            if (n < 1 || n > 16) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--gateways, --delivery-nodes and --relays: 1 to 16");
            }
        }
        Settings s = Settings.fromEnvironment();
        boolean generatedAdminToken = s.optional(ConfigKeys.ADMIN_TOKEN).isEmpty();
        if (generatedAdminToken) {
            byte[] b = new byte[24];
            new SecureRandom().nextBytes(b);
            s = s.with(ConfigKeys.ADMIN_TOKEN, Base64.getUrlEncoder().withoutPadding().encodeToString(b));
        }
        adminTokenShown = demo ? s.string(ConfigKeys.ADMIN_TOKEN).split(",")[0]
                : generatedAdminToken ? saveAdminToken(s) : "<your IM_ADMIN_TOKEN>";
        GatewayConfig gwCfg = GatewayConfig.from(s);   // validated early; rebuilt below with Kafka
        Faults.parse(s.string(ConfigKeys.FAULT));       // validated early too
        Runtime.getRuntime().addShutdownHook(new Thread(started::closeAll, "platform-shutdown"));
        try {
            DbConfig dbCfg;
            if (s.optional(ConfigKeys.PG_URL).isEmpty()) {
                EmbeddedPg pg = EmbeddedPg.start(Path.of(s.string(ConfigKeys.PG_DATA_DIR)),
                        s.get(ConfigKeys.PG_PORT), true);
                started.push(pg);
                pg.createDatabase("im");
                dbCfg = pg.dbConfig("im", s.get(ConfigKeys.PG_POOL_SIZE));
            } else {
                dbCfg = DbConfig.from(s);
            }
            Database db = Database.open(dbCfg, "platform");
            started.push(db);
            Database.migrate(db.dataSource());

            String bootstrap = s.optional(ConfigKeys.KAFKA_BOOTSTRAP).orElse(null);
            if (bootstrap == null) {
                EmbeddedKafkaBroker kafka = EmbeddedKafkaBroker.start(Path.of(s.string(ConfigKeys.KAFKA_DATA_DIR)),
                        s.get(ConfigKeys.KAFKA_PORT), true);
                started.push(kafka);
                bootstrap = kafka.bootstrapServers();
            }
            TopicNames topics = TopicNames.from(s);
            SharedTopics.create(bootstrap, s);
            Settings roles = s.with(ConfigKeys.KAFKA_BOOTSTRAP, bootstrap)
                    .with(ConfigKeys.PG_URL, dbCfg.jdbcUrl())
                    .with(ConfigKeys.PG_USER, dbCfg.user())
                    .with(ConfigKeys.PG_PASSWORD, dbCfg.password());

            if (processes) {
                startChildren(s, roles, db, dbCfg, bootstrap, topics);
                return awaitStop();
            }

            // The same role handles the role commands run, in this JVM, sharing one meter registry.
            PrometheusMeterRegistry meters = Metrics.newRegistry();
            List<Role.Running<?>> running = new ArrayList<>();
            for (Role<?> role : List.<Role<?>>of(CdcRelay.role(), DeliveryNode.role(), Sweeper.role())) {
                running.add(started.push(role.start(roles, meters)));
            }
            Role.Running<Gateway> gateway = started.push(Gateway.role().start(roles, meters));
            running.add(gateway);
            Gateway gw = gateway.component();
            gwCfg = GatewayConfig.from(roles);   // host and admin token, as the gateway read them
            // ready when every role is (the gateway's check is that the database answers)
            OpsServer ops = started.push(OpsServer.start(OpsConfig.from(s), meters,
                    () -> running.stream().allMatch(Role.Running::isReady)));

            String scheme = gwCfg.tlsCert().isPresent() ? "https" : "http";
            String http = scheme + "://" + gwCfg.host() + ":" + gw.port();
            String ws = http.replaceFirst("^http", "ws") + "/ws";
            String admin = scheme + "://" + gwCfg.adminHost() + ":" + gw.adminPort();
            System.out.println();
            System.out.println("IM platform is running.");
            System.out.println("  WebSocket:   " + ws);
            System.out.println("  Web client:  " + http + "/   (sign in with a device token; docs/web-client.md)");
            System.out.println("  Admin API:   " + admin + "/admin   (Authorization: Bearer " + adminTokenShown + ")");
            System.out.println("  Health:      " + admin + "/healthz   " + admin + "/readyz   " + admin + "/metrics   (gateway)");
            System.out.println("  Ops:         " + ops.url() + "/healthz   " + ops.url() + "/readyz   " + ops.url()
                    + "/metrics   (every role)");
            System.out.println("  PostgreSQL:  " + dbCfg.jdbcUrl() + "  (user " + dbCfg.user() + ")");
            System.out.println("  Kafka:       " + bootstrap + "  topics " + topics.conversationKeyed());
            System.out.println("  Roles:       gateway " + gw.id() + ", CDC relay (slot " + s.string(ConfigKeys.RELAY_SLOT) + "), delivery node, sweeper (every " + s.get(ConfigKeys.SWEEP_MS).toMillis() + " ms)");
            if (demo) printDemo(new Directory(db.dataSource(), Clock.systemUTC(), gwCfg.tokenTtl()), ws, http, http);
            System.out.println("Ctrl-C stops everything.");
            System.out.println("IM_READY platform port=" + gw.port() + " admin=" + gw.adminPort());
            System.out.flush();
        } catch (RuntimeException e) {
            started.closeAll();
            throw e;
        }
        return awaitStop();
    }

    private int awaitStop() throws InterruptedException {
        if (exitAfterStart) {
            started.closeAll();
            return 0;
        }
        new CountDownLatch(1).await();
        return 0;
    }

    /** {@code --processes}: every role as its own child JVM on the services started above. */
    private void startChildren(Settings s, Settings roles, Database db, DbConfig dbCfg, String bootstrap, TopicNames topics) {
        int gwBase = s.get(ConfigKeys.GATEWAY_PORT);
        int opsBase = s.get(ConfigKeys.OPS_PORT);
        List<RoleProcesses.Spec> specs = new ArrayList<>();
        int ops = 0;
        for (int i = 1; i <= relays; i++) {
            specs.add(new RoleProcesses.Spec("relay-" + i, "relay", Map.of(ConfigKeys.OPS_PORT.name(), port(opsBase, ++ops))));
        }
        for (int i = 1; i <= deliveryNodes; i++) {
            specs.add(new RoleProcesses.Spec("delivery-" + i, "delivery", Map.of(ConfigKeys.OPS_PORT.name(), port(opsBase, ++ops))));
        }
        specs.add(new RoleProcesses.Spec("sweeper", "sweeper", Map.of(ConfigKeys.OPS_PORT.name(), port(opsBase, ++ops))));
        int adminBase = s.get(ConfigKeys.ADMIN_PORT);
        for (int i = 1; i <= gateways; i++) {
            specs.add(new RoleProcesses.Spec("gateway-" + i, "gateway", Map.of(
                    ConfigKeys.GATEWAY_PORT.name(), port(gwBase, i - 1),
                    ConfigKeys.ADMIN_PORT.name(), port(adminBase, i - 1),
                    ConfigKeys.GATEWAY_ID.name(), s.optional(ConfigKeys.GATEWAY_ID).orElse("gw") + "-" + i)));
        }
        Map<String, String> common = new HashMap<>(roles.explicitValues());
        common.remove(ConfigKeys.GATEWAY_ID.name());
        RoleProcesses children = new RoleProcesses(System.out);
        started.push(children);
        System.out.println("starting " + specs.size() + " role processes ...");
        List<RoleProcesses.Ready> ready = children.start(specs, common, 180_000);
        GatewayConfig gwCfg = GatewayConfig.from(roles);
        String scheme = gwCfg.tlsCert().isPresent() ? "https" : "http";
        List<String> gatewayHttp = new ArrayList<>();
        List<String> gatewayAdmin = new ArrayList<>();
        System.out.println();
        System.out.println("IM platform is running, one process per role.");
        for (RoleProcesses.Ready r : ready) {
            System.out.println("  " + String.format("%-12s", r.name()) + r.readyLine().substring("IM_READY ".length()));
            Matcher m = READY_PORT.matcher(r.readyLine());
            if (m.find()) {
                gatewayHttp.add(scheme + "://" + gwCfg.host() + ":" + m.group(1));
                gatewayAdmin.add(scheme + "://" + gwCfg.adminHost() + ":" + m.group(2));
            }
        }
        System.out.println("  PostgreSQL:  " + dbCfg.jdbcUrl() + "  (user " + dbCfg.user() + ")");
        System.out.println("  Kafka:       " + bootstrap + "  topics " + topics.conversationKeyed());
        String firstHttp = gatewayHttp.get(0);
        System.out.println("  Admin API:   " + gatewayAdmin.get(0) + "/admin   (Authorization: Bearer " + adminTokenShown + "; every gateway has one)");
        System.out.println("  Web client:  " + firstHttp + "/   (any gateway serves it)");
        if (demo) {
            printDemo(new Directory(db.dataSource(), Clock.systemUTC(), gwCfg.tokenTtl()),
                    firstHttp.replaceFirst("^http", "ws") + "/ws", firstHttp, gatewayHttp.get(gatewayHttp.size() - 1));
        }
        System.out.println("Ctrl-C stops everything.");
        System.out.println("IM_READY platform processes=" + ready.size());
        System.out.flush();
    }

    private static final Pattern READY_PORT = Pattern.compile("^IM_READY gateway port=(\\d+) admin=(\\d+)");

    /** base + offset, or 0 (any free port) when the base is 0. */
    private static String port(int base, int offset) {
        return String.valueOf(base == 0 ? 0 : base + offset);
    }


    /** Prints the demo's tokens and sign-in links: u-ana's on {@code anaHttp}, u-bo's on {@code boHttp} (another gateway, if there are several). */
    private static void printDemo(Directory dir, String ws, String anaHttp, String boHttp) {
        for (String u : List.of("u-ana", "u-bo")) {
            try {
                dir.createUser(u, u.substring(2));
            } catch (DirectoryException e) {
                if (e.code() != DirectoryException.Code.ALREADY_EXISTS) throw e;
            }
        }
        DeviceRegistration ana = registerOrReinstall(dir, "u-ana", "d-ana");
        DeviceRegistration bo = registerOrReinstall(dir, "u-bo", "d-bo");
        try {
            dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));
        } catch (DirectoryException e) {
            if (e.code() != DirectoryException.Code.ALREADY_EXISTS) throw e;
        }
        System.out.println();
        System.out.println("Demo: conversation c-ab between u-ana and u-bo (fresh device tokens on every start).");
        System.out.println("  u-ana / d-ana token: " + ana.token());
        System.out.println("  u-bo  / d-bo  token: " + bo.token());
        System.out.println("  In a browser (one window each; the part after # stays in the browser):");
        System.out.println("    as u-ana: " + anaHttp + "/#token=" + ana.token());
        System.out.println("    as u-bo:  " + boHttp + "/#token=" + bo.token());
        System.out.println("  Or by hand:  connect to " + ws + " and send");
        System.out.println("    {\"t\":\"auth\",\"rid\":\"a1\",\"token\":\"" + ana.token() + "\"}");
        System.out.println("    {\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"hello-1\",\"body\":\"hello\"}");
    }

    /** Demo devices get a fresh token each start (tokens are stored only hashed). */
    private static DeviceRegistration registerOrReinstall(Directory dir, String user, String device) {
        try {
            return dir.registerDevice(user, device);
        } catch (DirectoryException e) {
            if (e.code() != DirectoryException.Code.ALREADY_EXISTS) throw e;
            return dir.reinstallDevice(device);
        }
    }
}
