package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Prometheus's own checker on {@code ops/prometheus}: {@code promtool check rules alerts.yml} (the
 * file loads: syntax, PromQL, templates), {@code promtool check config prometheus.yml} (the compose
 * stack's scrape configuration) and {@code promtool test rules alerts.test.yml} (alerts
 * fire on histories that break them and not before). Needs {@code promtool} (Debian's
 * {@code prometheus} package; {@code ./run-tests} installs it): without it the test fails and says so.
 */
class PromtoolIT {
    private static String promtool() {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            Path p = Path.of(dir, "promtool");
            if (Files.isExecutable(p)) return p.toString();
        }
        throw new AssertionError("promtool not found on PATH: install Debian's prometheus package"
                + " (apt-get install --no-install-recommends prometheus), as ./run-tests does");
    }

    private static String run(Path dir, String... args) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(args).directory(dir.toFile()).redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "promtool did not finish within 60 s");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), String.join(" ", args) + "\n" + out);
        return out;
    }

    @Test
    void promtoolAcceptsTheRulesAndTheScrapeConfigAndTheRulesUnitTestsPass() throws Exception {
        Path dir = OpsFiles.root().resolve("ops/prometheus");
        String tool = promtool();
        String checked = run(dir, tool, "check", "rules", "alerts.yml");
        assertTrue(checked.contains("SUCCESS: 15 rules found"), checked);
        String config = run(dir, tool, "check", "config", "prometheus.yml");
        assertTrue(config.contains("is valid prometheus config file"), config);
        String tested = run(dir, tool, "test", "rules", "alerts.test.yml");
        assertTrue(tested.contains("SUCCESS"), tested);
    }

    @Test
    void aBrokenRuleIsRefused(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        Files.writeString(tmp.resolve("bad.yml"), String.join("\n", List.of(
                "groups:", "  - name: g", "    rules:", "      - alert: A", "        expr: sum(rate(im_sends_total[5m]) > 0", "")));
        Process p = new ProcessBuilder(promtool(), "check", "rules", "bad.yml").directory(tmp.toFile()).redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(1, p.exitValue(), out);
    }
}
