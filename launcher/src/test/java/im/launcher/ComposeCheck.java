package im.launcher;

import im.delivery.route.DeliveryConfig;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.kafka.TopicNames;
import im.infra.ops.OpsConfig;
import im.relay.RelayConfig;
import im.sweeper.SweeperConfig;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.AppInfoParser;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import picocli.CommandLine;

/**
 * Checks {@code docker-compose.yml} and the {@code Dockerfile} against what the project really
 * offers, without a Docker engine: the launcher's roles (the {@code im} subcommands implementing
 * {@link RoleCommand}), the configuration keys ({@link ConfigKeys}) and each role's own validation of
 * its settings, the root pom's modules and the launcher's jar name. Every problem found is
 * collected as one sentence naming the service or instruction, so a failing test shows all of
 * them at once.
 *
 * <p>The YAML is read with SnakeYAML, which resolves anchors and merge keys ({@code <<}) the way
 * compose does; {@code ${VAR}}, {@code ${VAR:-default}}, {@code ${VAR-default}},
 * {@code ${VAR:?message}}, {@code ${VAR?message}} and {@code $$} in values are interpolated from a
 * given deployment environment, as compose does from the shell and {@code .env}.
 */
final class ComposeCheck {
    /** The role that runs every other role plus embedded PostgreSQL and Kafka in one JVM: never a compose service. */
    static final String ALL_IN_ONE = "platform";
    /** Instances a highly available stack needs per role; a role not listed needs one. */
    static final Map<String, Integer> MIN_INSTANCES = Map.of("gateway", 2, "delivery", 2, "relay", 2, "sweeper", 1);
    static final String HEALTH_PATH = "/readyz";
    private static final Set<String> RESTART_POLICIES = Set.of("always", "unless-stopped", "on-failure");
    private static final Set<String> TEST_ONLY_KEYS = Set.of(ConfigKeys.FAULT.name(), ConfigKeys.STACK.name());

    /**
     * Where a role serves /healthz and /readyz ({@code host:port}), and the listener it may publish
     * ({@code publicHost:publicPort}), as its own configuration says: for the gateway its public
     * listener (the admin listener must never be published), for the others their ops server.
     */
    record Endpoint(String host, int port, String publicHost, int publicPort) {
        Endpoint(String host, int port) {
            this(host, port, host, port);
        }
    }

    /**
     * Per role, its settings validated the way its main class does at start, and where it serves
     * {@code /readyz}. A new role must be added here (the check reports a role without an entry).
     */
    static final Map<String, Function<Settings, Endpoint>> ROLE_SETTINGS = Map.of(
            "gateway", s -> {
                GatewayConfig g = GatewayConfig.from(s);
                DbConfig.from(s);
                Faults.parse(s.string(ConfigKeys.FAULT));
                return new Endpoint(g.adminHost(), g.adminPort(), g.host(), g.port());
            },
            "relay", s -> {
                RelayConfig.from(s);
                TopicNames.from(s);
                return partitionsAndOps(s);
            },
            "delivery", s -> {
                DeliveryConfig.from(s);
                return partitionsAndOps(s);
            },
            "sweeper", s -> {
                SweeperConfig.from(s);
                return partitionsAndOps(s);
            });

    private static Endpoint partitionsAndOps(Settings s) {
        s.get(ConfigKeys.PARTITIONS);
        OpsConfig ops = OpsConfig.from(s);
        return new Endpoint(ops.host(), ops.port());
    }

    /** The four files the check reads, as text (tests change them to prove the check fails). */
    record Inputs(String compose, String dockerfile, String dockerignore, String rootPom, String launcherPom) {
        static Inputs read(Path repoRoot) throws IOException {
            return new Inputs(Files.readString(repoRoot.resolve("docker-compose.yml")),
                    Files.readString(repoRoot.resolve("Dockerfile")),
                    Files.readString(repoRoot.resolve(".dockerignore")),
                    Files.readString(repoRoot.resolve("pom.xml")),
                    Files.readString(repoRoot.resolve("launcher/pom.xml")));
        }
    }

    /** What the launcher offers, read from its picocli model. */
    record Launcher(Set<String> commands, Set<String> roles) {
        static Launcher fromPicocli() {
            Set<String> commands = new TreeSet<>();
            Set<String> roles = new TreeSet<>();
            for (CommandLine sub : new CommandLine(new Im()).getSubcommands().values()) {
                commands.add(sub.getCommandName());
                if (sub.getCommand() instanceof RoleCommand) roles.add(sub.getCommandName());
            }
            return new Launcher(commands, roles);
        }
    }

    private final Inputs in;
    private final Launcher launcher;
    private final Map<String, String> deployEnv;
    private final List<String> problems = new ArrayList<>();
    private final Set<String> exposed = new TreeSet<>();
    private boolean finalStageInstallsCurl;

    private ComposeCheck(Inputs in, Launcher launcher, Map<String, String> deployEnv) {
        this.in = in;
        this.launcher = launcher;
        this.deployEnv = deployEnv;
    }

    /** Every problem found; empty when compose, Dockerfile and launcher agree. */
    static List<String> problems(Inputs in, Launcher launcher, Map<String, String> deployEnv) {
        ComposeCheck c = new ComposeCheck(in, launcher, deployEnv);
        c.checkDockerfile();
        c.checkCompose();
        return c.problems;
    }

    private void problem(String s) {
        problems.add(s);
    }

    // ---- Dockerfile ---------------------------------------------------------------------------

    private record Instruction(String keyword, String args, int line) {
    }

    /** Instructions per stage; continuation lines joined, comments dropped. */
    private static List<List<Instruction>> stages(String dockerfile) {
        List<List<Instruction>> stages = new ArrayList<>();
        String[] lines = dockerfile.split("\n", -1);
        StringBuilder current = null;
        int start = 0;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.startsWith("#") || (line.isEmpty() && current == null)) continue;
            if (current == null) {
                current = new StringBuilder();
                start = i + 1;
            }
            boolean continues = line.endsWith("\\");
            current.append(continues ? line.substring(0, line.length() - 1) : line).append(' ');
            if (continues) continue;
            String text = current.toString().strip();
            current = null;
            if (text.isEmpty()) continue;
            int sp = text.indexOf(' ');
            String keyword = (sp < 0 ? text : text.substring(0, sp)).toUpperCase();
            String args = sp < 0 ? "" : text.substring(sp + 1).strip();
            if (keyword.equals("FROM")) stages.add(new ArrayList<>());
            if (stages.isEmpty()) continue;   // ARG before the first FROM
            stages.get(stages.size() - 1).add(new Instruction(keyword, args, start));
        }
        return stages;
    }

    /** {@code ARG NAME=default} lines before the first FROM: what a FROM may refer to. */
    private static Map<String, String> globalArgs(String dockerfile) {
        Map<String, String> args = new LinkedHashMap<>();
        for (String raw : dockerfile.split("\n")) {
            String line = raw.strip();
            if (line.toUpperCase().startsWith("FROM ")) break;
            Matcher m = Pattern.compile("(?i)ARG\\s+(\\w+)(?:=(\\S*))?").matcher(line);
            if (m.matches()) args.put(m.group(1), m.group(2) == null ? "" : m.group(2));
        }
        return args;
    }

    /**
     * The image a FROM names, with build arguments replaced by their defaults: the defaults must be the
     * official images (a machine without registry access passes local ones with --build-arg).
     */
    private String fromImage(String image, Map<String, String> args) {
        Matcher m = Pattern.compile("\\$\\{?(\\w+)}?").matcher(image);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = args.get(m.group(1));
            if (value == null || value.isEmpty()) {
                problem("Dockerfile: FROM " + image + ": the build argument " + m.group(1)
                        + " needs an ARG with a default (the official image) before the first FROM");
                value = "";
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }

    private void checkDockerfile() {
        List<List<Instruction>> stages = stages(in.dockerfile());
        if (stages.size() < 2) {
            problem("Dockerfile: needs at least two stages (a Maven build and a JRE runtime), has " + stages.size());
            return;
        }
        List<Instruction> build = stages.get(0);
        List<Instruction> runtime = stages.get(stages.size() - 1);
        Map<String, String> globalArgs = globalArgs(in.dockerfile());
        String[] buildFrom = build.get(0).args().split("\\s+");
        String buildImage = fromImage(buildFrom[0], globalArgs);
        String buildName = buildFrom.length >= 3 && buildFrom[1].equalsIgnoreCase("AS") ? buildFrom[2] : "0";
        if (!buildImage.startsWith("maven:") || !buildImage.contains("temurin-17")) {
            problem("Dockerfile: the build stage must use the official maven image with Temurin 17, uses " + buildImage);
        }
        String runtimeImage = fromImage(runtime.get(0).args().split("\\s+")[0], globalArgs);
        if (!runtimeImage.startsWith("eclipse-temurin:17") || !runtimeImage.contains("jre")) {
            problem("Dockerfile: the final stage must be a Temurin 17 JRE image, is " + runtimeImage);
        }

        // Build stage: every module's pom before the first Maven run, then the sources, then the launcher package.
        int firstMvn = indexOf(build, i -> i.keyword().equals("RUN") && i.args().contains("mvn "));
        Set<String> copiedPoms = new LinkedHashSet<>();
        for (int k = 0; k < (firstMvn < 0 ? build.size() : firstMvn); k++) {
            Instruction i = build.get(k);
            if (!i.keyword().equals("COPY")) continue;
            String[] parts = i.args().split("\\s+");
            for (int p = 0; p < parts.length - 1; p++) {
                if (parts[p].endsWith("pom.xml")) copiedPoms.add(parts[p]);
            }
        }
        List<String> wantedPoms = new ArrayList<>(List.of("pom.xml"));
        for (String module : matches("<module>([^<]+)</module>", in.rootPom())) wantedPoms.add(module + "/pom.xml");
        for (String pom : wantedPoms) {
            if (!copiedPoms.contains(pom)) {
                problem("Dockerfile: the build stage must COPY " + pom + " before the first mvn run "
                        + "(every module of the root pom, for the dependency layer and the reactor)");
            }
        }
        for (String pom : copiedPoms) {
            if (!wantedPoms.contains(pom)) problem("Dockerfile: copies " + pom + ", which is not a module of the root pom");
        }
        int sources = indexOf(build, i -> i.keyword().equals("COPY") && i.args().equals(". ."));
        int pkg = lastIndexOf(build, i -> i.keyword().equals("RUN") && i.args().contains("mvn ")
                && i.args().contains("-pl launcher") && i.args().contains("-am") && i.args().contains("package"));
        if (sources < 0) problem("Dockerfile: the build stage must copy the sources (COPY . .) after the poms");
        if (pkg < 0 || pkg < sources) {
            problem("Dockerfile: the build stage must run `mvn ... -pl launcher -am package` after copying the sources");
        }

        // Runtime stage: the jar, a non-root user, the entrypoint, the ports.
        List<String> finalName = matches("<finalName>([^<]+)</finalName>", in.launcherPom());
        String jar = "launcher/target/" + (finalName.isEmpty() ? "launcher" : finalName.get(0)) + ".jar";
        String jarInImage = null;
        for (Instruction i : runtime) {
            if (!i.keyword().equals("COPY") || !i.args().startsWith("--from=")) continue;
            String[] parts = i.args().split("\\s+");
            if (parts.length == 3 && parts[0].equals("--from=" + buildName) && parts[1].endsWith("/" + jar)) jarInImage = parts[2];
        }
        if (jarInImage == null) {
            problem("Dockerfile: the final stage must COPY --from=" + buildName + " the launcher's jar (" + jar
                    + ", the shade plugin's finalName in launcher/pom.xml) to a file");
        }
        List<String> users = runtime.stream().filter(i -> i.keyword().equals("USER")).map(Instruction::args).toList();
        String user = users.isEmpty() ? "root" : users.get(users.size() - 1).split(":")[0];
        if (user.equals("root") || user.equals("0")) problem("Dockerfile: the final stage must run as a non-root USER");
        List<Instruction> entrypoints = runtime.stream().filter(i -> i.keyword().equals("ENTRYPOINT")).toList();
        List<String> entrypoint = entrypoints.isEmpty() ? List.of() : jsonArray(entrypoints.get(entrypoints.size() - 1).args());
        int jarFlag = entrypoint.indexOf("-jar");
        if (entrypoint.isEmpty() || !entrypoint.get(0).equals("java") || jarFlag < 0 || jarFlag + 1 >= entrypoint.size()
                || !Objects.equals(entrypoint.get(jarFlag + 1), jarInImage)) {
            problem("Dockerfile: the final stage's ENTRYPOINT must be an exec-form [\"java\", ..., \"-jar\", \"" + jarInImage
                    + "\"], is " + entrypoint);
        }
        for (Instruction i : runtime) {
            if (i.keyword().equals("EXPOSE")) {
                for (String p : i.args().split("\\s+")) exposed.add(p.replace("/tcp", ""));
            }
            if (i.keyword().equals("RUN") && i.args().matches(".*(apt-get install|apk add)[^&;|]*\\bcurl\\b.*")) {
                finalStageInstallsCurl = true;
            }
        }
        Set<String> ignored = new TreeSet<>(List.of(in.dockerignore().split("\\s*\n\\s*")));
        for (String must : List.of(".git/", "**/target/", "var/", ".env")) {
            if (!ignored.contains(must)) problem(".dockerignore: must exclude " + must + " from the build context");
        }
        Set<String> defaults = new TreeSet<>(List.of(ConfigKeys.GATEWAY_PORT.defaultValue(), ConfigKeys.ADMIN_PORT.defaultValue(),
                ConfigKeys.OPS_PORT.defaultValue()));
        if (!exposed.equals(defaults)) {
            problem("Dockerfile: EXPOSE " + exposed + " must be the default ports of IM_GATEWAY_PORT, IM_ADMIN_PORT and IM_OPS_PORT " + defaults);
        }
    }

    private static int indexOf(List<Instruction> l, java.util.function.Predicate<Instruction> p) {
        for (int i = 0; i < l.size(); i++) if (p.test(l.get(i))) return i;
        return -1;
    }

    private static int lastIndexOf(List<Instruction> l, java.util.function.Predicate<Instruction> p) {
        for (int i = l.size() - 1; i >= 0; i--) if (p.test(l.get(i))) return i;
        return -1;
    }

    private static List<String> matches(String regex, String text) {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile(regex).matcher(text);
        while (m.find()) out.add(m.group(1).strip());
        return out;
    }

    private static List<String> jsonArray(String s) {
        Object o = new Yaml(new SafeConstructor(new LoaderOptions())).load(s);   // a JSON array is YAML
        if (!(o instanceof List<?> l)) return List.of();
        return l.stream().map(String::valueOf).toList();
    }

    // ---- compose ------------------------------------------------------------------------------

    private void checkCompose() {
        LoaderOptions opts = new LoaderOptions();
        opts.setAllowDuplicateKeys(false);
        Object loaded;
        try {
            loaded = new Yaml(new SafeConstructor(opts)).load(in.compose());
        } catch (RuntimeException e) {
            problem("docker-compose.yml is not valid YAML: " + e.getMessage());
            return;
        }
        Map<String, Object> root = map(interpolate(loaded, "docker-compose.yml"));
        Map<String, Object> services = map(root.get("services"));
        if (services.isEmpty()) {
            problem("docker-compose.yml: no services");
            return;
        }
        Set<String> declaredVolumes = map(root.get("volumes")).keySet();
        Map<String, String> publishedBy = new TreeMap<>();
        Map<String, List<String>> byRole = new TreeMap<>();
        Set<String> roleImages = new TreeSet<>();
        Map<String, String> relaySlots = new TreeMap<>();
        Map<String, String> gatewayIds = new TreeMap<>();

        for (Map.Entry<String, Object> e : services.entrySet()) {
            String name = e.getKey();
            Map<String, Object> svc = map(e.getValue());
            Object build = svc.get("build");
            if (build == null && svc.get("image") == null) problem(name + ": has neither image nor build");
            if (!RESTART_POLICIES.contains(String.valueOf(svc.get("restart")))) {
                problem(name + ": needs a restart policy (restart: " + RESTART_POLICIES + "), has " + svc.get("restart"));
            }
            List<String> health = healthTest(name, svc);
            checkDependsOn(name, svc, services);
            checkVolumes(name, svc, declaredVolumes);
            List<int[]> ports = publishedPorts(name, svc, publishedBy);
            if (build == null) continue;

            // A role service: built from the one Dockerfile, running one role of the launcher.
            String context = build instanceof Map<?, ?> m ? String.valueOf(m.get("context")) : String.valueOf(build);
            String dockerfile = build instanceof Map<?, ?> m && m.get("dockerfile") != null ? String.valueOf(m.get("dockerfile")) : "Dockerfile";
            if (!context.equals(".") || !dockerfile.equals("Dockerfile")) {
                problem(name + ": must be built from the repository's Dockerfile (build: context '.'), is " + context + "/" + dockerfile);
            }
            if (svc.get("image") != null) roleImages.add(String.valueOf(svc.get("image")));
            String role = roleOf(name, svc);
            if (role == null) continue;
            byRole.computeIfAbsent(role, r -> new ArrayList<>()).add(name);
            Map<String, String> env = kafkaClientFile(name, svc, environment(svc));
            Settings settings = settings(name, env);
            if (settings == null) continue;
            Function<Settings, Endpoint> validate = ROLE_SETTINGS.get(role);
            if (validate == null) continue;   // reported once below
            Endpoint ep;
            try {
                ep = validate.apply(settings);
            } catch (RuntimeException ex) {
                problem(name + ": the " + role + " role rejects its settings: " + ex.getMessage());
                continue;
            }
            checkEndpoint(name, ep, health, ports);
            checkSharedServices(name, env, services);
            if (role.equals("relay")) {
                relaySlots.put(name, settings.string(ConfigKeys.RELAY_SLOT));
                checkRelayWaitsForSchema(name, svc, services);
            }
            if (role.equals("gateway")) gatewayIds.put(name, env.getOrDefault(ConfigKeys.GATEWAY_ID.name(), ""));
        }

        checkRoles(byRole);
        if (roleImages.size() > 1) problem("role services must share one image name, have " + roleImages);
        if (new TreeSet<>(relaySlots.values()).size() > 1) {
            problem("relays must share the same IM_RELAY_SLOT (one active, the others standby), have " + relaySlots);
        }
        for (Map.Entry<String, String> g : gatewayIds.entrySet()) {
            if (g.getValue().isBlank()) problem(g.getKey() + ": set IM_GATEWAY_ID (a stable name routes pushes and tags metrics)");
            else if (gatewayIds.values().stream().filter(g.getValue()::equals).count() > 1) {
                problem(g.getKey() + ": IM_GATEWAY_ID " + g.getValue() + " is used by another gateway (pushes are routed by it)");
            }
        }
        checkPostgres(services);
        checkKafka(services);
    }

    private static final Pattern VAR = Pattern.compile(
            "\\$\\$|\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?}|\\$([A-Za-z_][A-Za-z0-9_]*)");

    /** Compose's variable interpolation over every string value (keys are left alone, like compose). */
    private Object interpolate(Object node, String where) {
        if (node instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(String.valueOf(k), interpolate(v, where + "." + k)));
            return out;
        }
        if (node instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            for (Object o : l) out.add(interpolate(o, where));
            return out;
        }
        if (!(node instanceof String s)) return node;
        Matcher m = VAR.matcher(s);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            String replacement;
            if (m.group().equals("$$")) {
                replacement = "$";
            } else {
                String var = m.group(1) != null ? m.group(1) : m.group(4);
                String op = m.group(2);
                String arg = m.group(3);
                String value = deployEnv.get(var);
                boolean emptyCounts = op != null && op.startsWith(":");
                boolean missing = value == null || (emptyCounts && value.isEmpty());
                if (!missing) {
                    replacement = value;
                } else if (op != null && op.endsWith("-")) {
                    replacement = arg;
                } else if (op != null && op.endsWith("?")) {
                    problem(where + ": " + var + " is required and not set (" + arg + ")");
                    replacement = "";
                } else {
                    problem(where + ": " + var + " is not set and has no default (compose would substitute an empty string)");
                    replacement = "";
                }
            }
            m.appendReplacement(sb, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(sb);
        return sb.toString();
    }

    /** The service's health check command, or null (reported) if it has none. */
    private List<String> healthTest(String name, Map<String, Object> svc) {
        Map<String, Object> hc = map(svc.get("healthcheck"));
        Object test = hc.get("test");
        List<String> cmd = test instanceof List<?> l ? l.stream().map(String::valueOf).toList()
                : test == null ? List.of() : List.of("CMD-SHELL", String.valueOf(test));
        if (cmd.isEmpty() || cmd.get(0).equals("NONE") || Boolean.TRUE.equals(hc.get("disable"))) {
            problem(name + ": needs a healthcheck");
            return null;
        }
        return cmd;
    }

    private void checkDependsOn(String name, Map<String, Object> svc, Map<String, Object> services) {
        Object deps = svc.get("depends_on");
        if (deps == null) return;
        if (deps instanceof List<?> l) {
            problem(name + ": depends_on " + l + " must use the long form with condition: service_healthy");
            return;
        }
        for (Map.Entry<String, Object> d : map(deps).entrySet()) {
            if (!services.containsKey(d.getKey())) {
                problem(name + ": depends on " + d.getKey() + ", which is not a service");
                continue;
            }
            if (!"service_healthy".equals(map(d.getValue()).get("condition"))) {
                problem(name + ": depends on " + d.getKey() + " without condition: service_healthy");
            }
        }
    }

    private void checkVolumes(String name, Map<String, Object> svc, Set<String> declared) {
        for (Object v : list(svc.get("volumes"))) {
            String source = v instanceof Map<?, ?> m ? String.valueOf(m.get("source")) : String.valueOf(v).split(":")[0];
            boolean named = !source.startsWith(".") && !source.startsWith("/") && !source.startsWith("~");
            if (named && !declared.contains(source)) problem(name + ": volume " + source + " is not declared under top-level volumes");
        }
    }

    /** Mount target of a named volume in the service, or null. */
    private static String namedVolumeAt(Map<String, Object> svc, String target) {
        for (Object v : list(svc.get("volumes"))) {
            String[] parts = String.valueOf(v).split(":");
            if (parts.length >= 2 && parts[1].equals(target) && !parts[0].startsWith(".") && !parts[0].startsWith("/")) return parts[0];
        }
        return null;
    }

    /** [published, target] pairs; records each published port and reports one published twice. */
    private List<int[]> publishedPorts(String name, Map<String, Object> svc, Map<String, String> publishedBy) {
        List<int[]> out = new ArrayList<>();
        for (Object p : list(svc.get("ports"))) {
            String published;
            String target;
            if (p instanceof Map<?, ?> m) {
                published = String.valueOf(m.get("published"));
                target = String.valueOf(m.get("target"));
            } else {
                String[] parts = String.valueOf(p).replace("/tcp", "").split(":");
                target = parts[parts.length - 1];
                published = parts.length >= 2 ? parts[parts.length - 2] : null;
            }
            if (published == null || published.equals("null")) {
                problem(name + ": port " + p + " must name its published port (host:container)");
                continue;
            }
            String other = publishedBy.putIfAbsent(published, name);
            if (other != null) problem(name + ": host port " + published + " is published twice (also by " + other + ")");
            try {
                out.add(new int[] {Integer.parseInt(published), Integer.parseInt(target)});
            } catch (NumberFormatException ex) {
                problem(name + ": port " + p + " is not host:container numbers");
            }
        }
        return out;
    }

    private String roleOf(String name, Map<String, Object> svc) {
        Object command = svc.get("command");
        List<String> args = command instanceof List<?> l ? l.stream().map(String::valueOf).toList()
                : command == null ? List.of() : List.of(String.valueOf(command).strip().split("\\s+"));
        if (args.isEmpty()) {
            problem(name + ": a role service needs command: [\"<role>\"], one of " + rolesForCompose());
            return null;
        }
        String cmd = args.get(0);
        if (!launcher.commands().contains(cmd)) {
            problem(name + ": command '" + cmd + "' is not an im command (im offers " + launcher.commands() + ")");
            return null;
        }
        if (cmd.equals(ALL_IN_ONE)) {
            problem(name + ": '" + ALL_IN_ONE + "' is the all-in-one with embedded PostgreSQL and Kafka; the stack runs each role as its own service");
            return null;
        }
        if (!launcher.roles().contains(cmd)) {
            problem(name + ": '" + cmd + "' is a client command of im, not a role (roles: " + rolesForCompose() + ")");
            return null;
        }
        return cmd;
    }

    private Set<String> rolesForCompose() {
        Set<String> r = new TreeSet<>(launcher.roles());
        r.remove(ALL_IN_ONE);
        return r;
    }

    private static Map<String, String> environment(Map<String, Object> svc) {
        Map<String, String> env = new TreeMap<>();
        Object e = svc.get("environment");
        if (e instanceof Map<?, ?> m) {
            m.forEach((k, v) -> env.put(String.valueOf(k), v == null ? "" : String.valueOf(v)));
        } else {
            for (Object o : list(e)) {
                String s = String.valueOf(o);
                int eq = s.indexOf('=');
                env.put(eq < 0 ? s : s.substring(0, eq), eq < 0 ? "" : s.substring(eq + 1));
            }
        }
        return env;
    }

    /** The role's settings from its IM_* variables, or null (reported) if they are not acceptable at all. */
    /** The template of the roles' Kafka client file (the real one, under secrets/, is never in the repository). */
    static final Path KAFKA_CLIENT_EXAMPLE = Path.of("ops", "kafka", "kafka-client.properties.example");

    /**
     * A role that uses Kafka must authenticate to it: IM_KAFKA_CONFIG_FILE must be set and be a
     * file mounted into the service. {@code env} is returned with that setting pointing at the
     * template operators copy ({@link #KAFKA_CLIENT_EXAMPLE}), so that the role's own check of the
     * file runs on what the service will read.
     */
    private Map<String, String> kafkaClientFile(String name, Map<String, Object> svc, Map<String, String> env) {
        if (!env.containsKey(ConfigKeys.KAFKA_BOOTSTRAP.name())) return env;
        String file = env.get(ConfigKeys.KAFKA_CONFIG_FILE.name());
        if (file == null) {
            problem(name + ": IM_KAFKA_BOOTSTRAP without IM_KAFKA_CONFIG_FILE: the role would reach Kafka unauthenticated");
            return env;
        }
        boolean mounted = list(svc.get("volumes")).stream().map(v -> String.valueOf(v).split(":"))
                .anyMatch(parts -> parts.length >= 2 && parts[1].equals(file) && parts[0].startsWith("."));
        if (!mounted) problem(name + ": IM_KAFKA_CONFIG_FILE " + file + " is not a file mounted into the service");
        Map<String, String> checked = new TreeMap<>(env);
        checked.put(ConfigKeys.KAFKA_CONFIG_FILE.name(), repoRoot().resolve(KAFKA_CLIENT_EXAMPLE).toString());
        return checked;
    }

    /** The nearest directory at or above the working directory that holds docker-compose.yml. */
    static Path repoRoot() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.exists(d.resolve("docker-compose.yml"))) return d;
        }
        throw new IllegalStateException("no docker-compose.yml above " + Path.of("").toAbsolutePath());
    }

    private Settings settings(String name, Map<String, String> env) {
        boolean ok = true;
        for (String k : env.keySet()) {
            if (!k.startsWith("IM_")) {
                problem(name + ": " + k + " is set, but roles are configured by IM_* variables only");
                ok = false;
            } else if (TEST_ONLY_KEYS.contains(k)) {
                problem(name + ": " + k + " is for tests only");
                ok = false;
            }
        }
        try {
            Settings s = Settings.of(env);
            return ok ? s : null;
        } catch (RuntimeException ex) {
            problem(name + ": " + ex.getMessage());
            return null;
        }
    }

    private void checkEndpoint(String name, Endpoint ep, List<String> health, List<int[]> ports) {
        if (!exposed.contains(String.valueOf(ep.port()))) {
            problem(name + ": serves /readyz on port " + ep.port() + ", which the Dockerfile does not EXPOSE " + exposed);
        }
        if (health != null) {
            String url = health.stream().filter(a -> a.startsWith("http://")).findFirst().orElse(null);
            if (url == null || !health.get(0).equals("CMD")) {
                problem(name + ": the healthcheck must be [\"CMD\", <http client>, ..., \"http://127.0.0.1:" + ep.port() + HEALTH_PATH + "\"], is " + health);
            } else {
                URI u = URI.create(url);
                if (u.getPort() != ep.port() || !u.getPath().equals(HEALTH_PATH) || !Set.of("127.0.0.1", "localhost").contains(u.getHost())) {
                    problem(name + ": the health check asks " + url + ", but the role serves " + HEALTH_PATH + " on 127.0.0.1:" + ep.port());
                }
                if (health.get(1).equals("curl") && !finalStageInstallsCurl) {
                    problem(name + ": the health check runs curl, which the Dockerfile's final stage does not install");
                }
            }
        }
        if (!exposed.contains(String.valueOf(ep.publicPort()))) {
            problem(name + ": listens on port " + ep.publicPort() + ", which the Dockerfile does not EXPOSE " + exposed);
        }
        for (int[] p : ports) {
            if (p[1] == ep.port() && ep.port() != ep.publicPort()) {
                problem(name + ": publishes its admin listener (container port " + p[1] + "): the admin API and /metrics stay on the compose network");
            } else if (p[1] != ep.publicPort()) {
                problem(name + ": publishes container port " + p[1] + ", but the role listens on " + ep.publicPort());
            }
            if (!Set.of("0.0.0.0", "::").contains(ep.publicHost())) {
                problem(name + ": publishes a port but binds " + ep.publicHost() + " (set the role's *_HOST to 0.0.0.0 in a container)");
            }
        }
    }

    /** IM_PG_* and IM_KAFKA_BOOTSTRAP must name the stack's own PostgreSQL and Kafka, with their credentials. */
    private void checkSharedServices(String name, Map<String, String> env, Map<String, Object> services) {
        String url = env.get(ConfigKeys.PG_URL.name());
        if (url != null && url.startsWith("jdbc:postgresql://")) {
            URI u = URI.create(url.substring("jdbc:".length()));
            Map<String, Object> pg = map(services.get(u.getHost()));
            Map<String, String> pgEnv = environment(pg);
            if (pg.isEmpty() || !String.valueOf(pg.get("image")).startsWith("postgres:")) {
                problem(name + ": IM_PG_URL names host " + u.getHost() + ", which is not the stack's postgres service");
            } else {
                expectEqual(name, "the database of IM_PG_URL", u.getPath().replaceFirst("^/", ""), "POSTGRES_DB", pgEnv.get("POSTGRES_DB"));
                expectEqual(name, ConfigKeys.PG_USER.name(), env.getOrDefault(ConfigKeys.PG_USER.name(), ConfigKeys.PG_USER.defaultValue()),
                        "POSTGRES_USER", pgEnv.getOrDefault("POSTGRES_USER", "postgres"));
                expectEqual(name, ConfigKeys.PG_PASSWORD.name(), env.getOrDefault(ConfigKeys.PG_PASSWORD.name(), ConfigKeys.PG_PASSWORD.defaultValue()),
                        "POSTGRES_PASSWORD", pgEnv.get("POSTGRES_PASSWORD"));
                if (u.getPort() != 5432 && u.getPort() != -1) problem(name + ": IM_PG_URL port " + u.getPort() + " is not PostgreSQL's 5432");
            }
        }
        String bootstrap = env.get(ConfigKeys.KAFKA_BOOTSTRAP.name());
        if (bootstrap != null) {
            for (String hp : bootstrap.split(",")) {
                String host = hp.split(":")[0];
                String advertised = environment(map(services.get(host))).getOrDefault("KAFKA_ADVERTISED_LISTENERS", "");
                if (!advertised.contains("//" + hp.strip())) {
                    problem(name + ": IM_KAFKA_BOOTSTRAP " + hp + " is not an advertised listener of a kafka service");
                }
            }
        }
    }

    private void expectEqual(String name, String what, String value, String otherKey, String other) {
        if (!Objects.equals(value, other)) problem(name + ": " + what + " (" + value + ") differs from the postgres service's " + otherKey + " (" + other + ")");
    }

    /** The relay's publication covers tables the gateways' migrations create: it must start after one is healthy. */
    private void checkRelayWaitsForSchema(String name, Map<String, Object> svc, Map<String, Object> services) {
        for (Map.Entry<String, Object> d : map(svc.get("depends_on")).entrySet()) {
            Object cmd = map(services.get(d.getKey())).get("command");
            if (String.valueOf(cmd).contains("gateway") && "service_healthy".equals(map(d.getValue()).get("condition"))) return;
        }
        problem(name + ": a relay must depend on a gateway being healthy (the gateway migrates the schema the relay's publication covers)");
    }

    private void checkRoles(Map<String, List<String>> byRole) {
        if (!launcher.roles().contains(ALL_IN_ONE)) {
            problem("the launcher has no '" + ALL_IN_ONE + "' role any more: update ComposeCheck.ALL_IN_ONE and docs/operations.md");
        }
        Set<String> expected = rolesForCompose();
        if (!ROLE_SETTINGS.keySet().equals(expected)) {
            problem("ComposeCheck.ROLE_SETTINGS covers " + new TreeSet<>(ROLE_SETTINGS.keySet()) + " but the launcher's roles are " + expected);
        }
        for (String role : expected) {
            int want = MIN_INSTANCES.getOrDefault(role, 1);
            int have = byRole.getOrDefault(role, List.of()).size();
            if (have < want) problem("the stack needs at least " + want + " " + role + " service(s), has " + have + " " + byRole.getOrDefault(role, List.of()));
        }
        Set<String> extra = new TreeSet<>(byRole.keySet());
        extra.removeAll(expected);
        if (!extra.isEmpty()) problem("compose runs roles the launcher does not offer: " + extra);
    }

    /** The name of the one service built from an official image ({@code prefix} = "postgres:"), or null (reported). */
    private String onlyServiceFrom(Map<String, Object> services, String prefix) {
        List<String> names = services.entrySet().stream()
                .filter(e -> String.valueOf(map(e.getValue()).get("image")).startsWith(prefix))
                .map(Map.Entry::getKey).collect(Collectors.toList());
        if (names.size() == 1) return names.get(0);
        problem("the stack needs exactly one service from the official " + prefix + " image, has " + names);
        return null;
    }

    private void checkPostgres(Map<String, Object> services) {
        String name = onlyServiceFrom(services, "postgres:");
        if (name == null) return;
        Map<String, Object> pg = map(services.get(name));
        Object command = pg.get("command");
        String cmd = command instanceof List<?> l ? l.stream().map(String::valueOf).collect(Collectors.joining(" ")) : String.valueOf(command);
        for (String required : List.of("wal_level=logical", "fsync=on", "synchronous_commit=on")) {
            if (!cmd.contains(required)) problem(name + ": PostgreSQL must run with -c " + required + " (CDC; D1 and D6)");
        }
        if (namedVolumeAt(pg, "/var/lib/postgresql/data") == null) problem(name + ": needs a named volume at /var/lib/postgresql/data");
    }

    private void checkKafka(Map<String, Object> services) {
        String name = onlyServiceFrom(services, "apache/kafka:");
        if (name == null) return;
        Map<String, Object> kafka = map(services.get(name));
        String version = String.valueOf(kafka.get("image")).substring("apache/kafka:".length());
        if (!version.equals(AppInfoParser.getVersion())) {
            problem(name + ": the broker image is Kafka " + version + ", the platform's Kafka libraries are " + AppInfoParser.getVersion());
        }
        Map<String, String> env = environment(kafka);
        if (!env.getOrDefault("KAFKA_PROCESS_ROLES", "").equals("broker,controller")) problem(name + ": must be a single KRaft node (KAFKA_PROCESS_ROLES=broker,controller)");
        try {
            Uuid.fromString(env.getOrDefault("CLUSTER_ID", ""));
        } catch (IllegalArgumentException ex) {
            problem(name + ": CLUSTER_ID must be a Kafka Uuid (22 base64 characters): " + ex.getMessage());
        }
        if (!"false".equals(env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE"))) {
            problem(name + ": KAFKA_AUTO_CREATE_TOPICS_ENABLE must be false (the roles create their topics with the right partition counts)");
        }
        for (String k : List.of("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR",
                "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR")) {
            if (!"1".equals(env.get(k))) problem(name + ": " + k + " must be 1 on a single node (consumers hang otherwise)");
        }
        String logDirs = env.get("KAFKA_LOG_DIRS");
        if (logDirs == null || namedVolumeAt(kafka, logDirs) == null) problem(name + ": KAFKA_LOG_DIRS must be on a named volume");
        // Any container on the network must not reach the broker without credentials.
        Map<String, String> protocols = new TreeMap<>();
        for (String m : env.getOrDefault("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "").split(",")) {
            String[] kv = m.split(":");
            if (kv.length == 2) protocols.put(kv[0].strip(), kv[1].strip());
        }
        for (String l : env.getOrDefault("KAFKA_LISTENERS", "").split(",")) {
            Matcher lm = Pattern.compile("([A-Za-z_]+)://([^:]*):\\d+").matcher(l.strip());
            if (!lm.matches()) continue;
            String protocol = protocols.getOrDefault(lm.group(1), lm.group(1));
            if (!lm.group(2).equals("127.0.0.1") && !protocol.startsWith("SASL_")) {
                problem(name + ": listener " + lm.group(1) + " is reachable from the network without authentication (" + protocol
                        + "); bind it to 127.0.0.1 or make it SASL_*");
            }
        }
        if (!"false".equals(env.get("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND")) || env.get("KAFKA_AUTHORIZER_CLASS_NAME") == null) {
            problem(name + ": needs an authorizer (KAFKA_AUTHORIZER_CLASS_NAME) with KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=false");
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return o instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    private static List<?> list(Object o) {
        return o instanceof List<?> l ? l : List.of();
    }
}
