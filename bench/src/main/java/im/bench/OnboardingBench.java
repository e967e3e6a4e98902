package im.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.embedded.EmbeddedPg;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.fault.Faults;
import im.store.directory.Directory;
import im.store.directory.Onboarding;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Onboarding at scale (issue "Shapes", goal 5): N users, a device each with its token, and one group
 * of all N, through the admin API's bulk endpoints of an in-process gateway on an embedded
 * PostgreSQL, in requests of {@code --chunk} items; and, as the floor, the same directory calls
 * ({@link Onboarding}: the same SQL) without HTTP and JSON, on a database of their own. Each size
 * runs on a fresh database so the sizes can be compared: the time per item should stay flat as N
 * doubles. Prints one row per (size, path).
 *
 * <pre>
 * CP="bench/target/classes:$(cat bench/target/cp.txt)"
 * java -cp "$CP" im.bench.OnboardingBench --sizes 12500,25000,50000,100000
 * </pre>
 */
@Command(name = "onboarding-bench", mixinStandardHelpOptions = true,
        description = "Bulk users, devices and memberships: admin API vs the directory's own calls, at growing sizes.")
public final class OnboardingBench implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ADMIN_TOKEN = "onboarding-bench-admin-token-0123456789";

    @Option(names = "--sizes", split = ",", description = "group sizes (users = devices = members), default ${DEFAULT-VALUE}")
    List<Integer> sizes = List.of(12_500, 25_000, 50_000, 100_000);

    @Option(names = "--chunk", description = "items per request (IM_ADMIN_BULK_MAX), default ${DEFAULT-VALUE}")
    int chunk = 10_000;

    public static void main(String[] args) {
        System.exit(new CommandLine(new OnboardingBench()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Path tmp = Files.createTempDirectory("im-onboarding-");
        System.out.printf("# onboarding bench: sizes %s, %d items per request; load average before %s%n", sizes, chunk, BenchEnv.loadAvg());
        System.out.printf("%-9s %-10s %10s %10s %12s %14s %12s%n", "N", "path", "users s", "devices s", "members s", "members µs/ea", "total s");
        try (EmbeddedPg pg = EmbeddedPg.start(tmp.resolve("pg"), 0, false)) {
            int run = 0;
            for (int n : sizes) {
                for (String path : List.of("directory", "admin-api")) {
                    String dbName = "onb" + (run++);
                    pg.createDatabase(dbName);
                    try (Database db = Database.open(pg.dbConfig(dbName, 4), dbName)) {
                        Database.migrate(db.dataSource());
                        Directory dir = new Directory(db.dataSource(), Clock.systemUTC());
                        double[] t = path.equals("directory") ? direct(dir, n) : throughApi(pg, dbName, db, n);
                        System.out.printf("%-9d %-10s %10.2f %10.2f %12.2f %14.1f %12.2f%n", n, path, t[0], t[1], t[2],
                                t[2] * 1e6 / n, t[0] + t[1] + t[2]);
                        long joins = dir.conversation("g-all").head();
                        if (joins != n) throw new IllegalStateException(path + ": " + joins + " join events for " + n + " members");
                    }
                }
            }
        } finally {
            BenchEnv.deleteTree(tmp);
        }
        System.out.printf("# load average after %s%n", BenchEnv.loadAvg());
        return 0;
    }

    /** Seconds for users, devices, members through {@link Onboarding} directly. */
    private double[] direct(Directory dir, int n) {
        Onboarding bulk = dir.onboarding();
        double[] t = new double[3];
        long t0 = System.nanoTime();
        for (int from = 0; from < n; from += chunk) {
            List<Onboarding.NewUser> us = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + chunk); i++) us.add(new Onboarding.NewUser("u-" + i, "User " + i));
            bulk.createUsers(us);
        }
        t[0] = secs(t0);
        t0 = System.nanoTime();
        for (int from = 0; from < n; from += chunk) {
            List<Onboarding.NewDevice> ds = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + chunk); i++) ds.add(new Onboarding.NewDevice("u-" + i, "d-" + i));
            bulk.registerDevices(ds);
        }
        t[1] = secs(t0);
        t0 = System.nanoTime();
        for (int from = 0; from < n; from += chunk) {
            List<String> ms = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + chunk); i++) ms.add("u-" + i);
            if (from == 0) dir.createConversation("g-all", "group", ms);
            else bulk.addMembers("g-all", ms);
        }
        t[2] = secs(t0);
        return t;
    }

    /** The same through the bulk endpoints of a gateway's admin listener. */
    private double[] throughApi(EmbeddedPg pg, String dbName, Database db, int n) throws Exception {
        Settings s = Settings.of(Map.of("IM_PG_URL", pg.jdbcUrl(dbName), "IM_GATEWAY_PORT", "0", "IM_ADMIN_PORT", "0",
                "IM_ADMIN_TOKEN", ADMIN_TOKEN, "IM_ADMIN_BULK_MAX", Integer.toString(chunk)));
        double[] t = new double[3];
        try (Gateway gw = Gateway.start(GatewayConfig.from(s), db.dataSource(), Faults.none(), Clock.systemUTC())) {
            HttpClient http = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + gw.adminPort();
            long t0 = System.nanoTime();
            for (int from = 0; from < n; from += chunk) {
                ObjectNode body = JSON.createObjectNode();
                ArrayNode us = body.putArray("users");
                for (int i = from; i < Math.min(n, from + chunk); i++) us.addObject().put("user", "u-" + i).put("name", "User " + i);
                post(http, base + "/admin/users/bulk", body);
            }
            t[0] = secs(t0);
            t0 = System.nanoTime();
            for (int from = 0; from < n; from += chunk) {
                ObjectNode body = JSON.createObjectNode();
                ArrayNode ds = body.putArray("devices");
                for (int i = from; i < Math.min(n, from + chunk); i++) ds.addObject().put("user", "u-" + i).put("device", "d-" + i);
                JsonNode r = post(http, base + "/admin/devices/bulk", body);
                if (r.get("devices").size() != Math.min(chunk, n - from)) throw new IllegalStateException("devices missing: " + r.get("existing"));
            }
            t[1] = secs(t0);
            t0 = System.nanoTime();
            for (int from = 0; from < n; from += chunk) {
                ObjectNode body = JSON.createObjectNode();
                ArrayNode ms = body.putArray(from == 0 ? "members" : "users");
                for (int i = from; i < Math.min(n, from + chunk); i++) ms.add("u-" + i);
                if (from == 0) post(http, base + "/admin/conversations", body.put("conv", "g-all").put("kind", "group"));
                else post(http, base + "/admin/conversations/g-all/members", body);
            }
            t[2] = secs(t0);
        }
        return t;
    }

    private static JsonNode post(HttpClient http, String url, ObjectNode body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url))
                .header("Authorization", "Bearer " + ADMIN_TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) throw new IllegalStateException(url + ": " + r.statusCode() + " " + r.body());
        return JSON.readTree(r.body());
    }

    private static double secs(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
