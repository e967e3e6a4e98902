package im.launcher;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.Yaml;

/**
 * The PromQL of {@code ops/prometheus/alerts.yml} and {@code ops/grafana/im-platform.json}, and
 * what of it a scrape of the roles' {@code /metrics} does not export: metric names (ours and the
 * JVM's and Kafka clients', not Prometheus's own {@code up}) and the {@code label="value"} matchers
 * of their selectors (e.g. {@code le="5.0"}, {@code over="60s"}), which must match a series.
 */
final class OpsFiles {
    private static final Pattern NAME = Pattern.compile("\\b(?:im|kafka|jvm|process|system)_[A-Za-z0-9_]+\\b");
    private static final Pattern SELECTOR = Pattern.compile("\\b((?:im|kafka|jvm|process|system)_[A-Za-z0-9_]+)\\{([^}]*)}");
    private static final Pattern EQUALS = Pattern.compile("([A-Za-z_][A-Za-z0-9_]*)\\s*=\\s*\"([^\"]*)\"");
    private static final Pattern STRING = Pattern.compile("\"[^\"]*\"");

    private OpsFiles() {}

    /** The repository root (the directory holding {@code ops/}). */
    static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("ops/prometheus"))) dir = dir.getParent();
        if (dir == null) throw new IllegalStateException("no ops/prometheus above " + Path.of("").toAbsolutePath());
        return dir;
    }

    /** Every {@code expr} of the alert rules and of the dashboard's panels. */
    static List<String> expressions(Path root) throws IOException {
        List<String> out = new ArrayList<>();
        try (InputStream in = Files.newInputStream(root.resolve("ops/prometheus/alerts.yml"))) {
            Map<String, Object> doc = new Yaml().load(in);
            for (Object g : (List<?>) doc.get("groups")) {
                for (Object r : (List<?>) ((Map<?, ?>) g).get("rules")) out.add(String.valueOf(((Map<?, ?>) r).get("expr")));
            }
        }
        JsonNode dash = new ObjectMapper().readTree(root.resolve("ops/grafana/im-platform.json").toFile());
        for (JsonNode panel : dash.get("panels")) {
            for (JsonNode t : panel.path("targets")) out.add(t.get("expr").asText());
        }
        return out;
    }

    /** Metric names used by {@code exprs} (label values and strings are not names). */
    static Set<String> names(List<String> exprs) {
        Set<String> names = new TreeSet<>();
        for (String e : exprs) {
            Matcher m = NAME.matcher(STRING.matcher(e).replaceAll("\"\""));
            while (m.find()) names.add(m.group());
        }
        return names;
    }

    /**
     * What {@code exprs} use that {@code scrape} (Prometheus text of one or more targets) lacks:
     * a name no series has, or a {@code name{label="value"}} no series of that name matches.
     */
    static Set<String> missing(List<String> exprs, String scrape) {
        Set<String> series = new TreeSet<>();
        for (String line : scrape.split("\n")) {
            if (!line.isEmpty() && !line.startsWith("#")) series.add(line.substring(0, line.lastIndexOf(' ')));
        }
        Set<String> missing = new TreeSet<>();
        for (String name : names(exprs)) {
            if (series.stream().noneMatch(s -> s.equals(name) || s.startsWith(name + "{"))) missing.add(name);
        }
        for (String e : exprs) {
            Matcher sel = SELECTOR.matcher(e);
            while (sel.find()) {
                Matcher eq = EQUALS.matcher(sel.group(2));
                while (eq.find()) {
                    String want = eq.group(1) + "=\"" + eq.group(2) + "\"";
                    String name = sel.group(1);
                    if (series.stream().noneMatch(s -> s.startsWith(name + "{") && (s.contains("{" + want) || s.contains("," + want)))) {
                        missing.add(name + "{" + want + "}");
                    }
                }
            }
        }
        return missing;
    }
}
