package im.launcher.cli;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Duration;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Options of every command that uses the admin API: where the gateway's admin listener is (not its
 * public port: docs/security.md), the CA file for an https one, the admin token, raw JSON output,
 * and how long to wait.
 */
public final class AdminOptions {
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Mixin
    CaFileOption trust;

    @Option(names = "--admin-url", paramLabel = "URL",
            description = "Base URL of a gateway's admin listener (default: http://127.0.0.1:<IM_ADMIN_PORT>, i.e. http://127.0.0.1:8081).")
    String adminUrl;

    @Option(names = "--admin-token", paramLabel = "TOKEN",
            description = "Admin API token (default: the IM_ADMIN_TOKEN variable; `im platform` prints the token it uses).")
    String adminToken;

    @Option(names = "--json", description = "Print the admin API's JSON reply instead of text.")
    boolean json;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "How long to wait for a connection or a reply (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    /** A client for the admin API, or a usage error if no token is known. */
    public AdminClient client() {
        String token = adminToken != null ? adminToken : Settings.fromEnvironment().optional(ConfigKeys.ADMIN_TOKEN).orElse(null);
        if (token == null || token.isBlank()) {
            throw usage("no admin token: pass --admin-token or set IM_ADMIN_TOKEN (`im platform` prints the one it uses)");
        }
        if (timeoutSeconds < 1) throw usage("--timeout: must be at least 1 second");
        Duration timeout = Duration.ofSeconds(timeoutSeconds);
        URI base = base();
        return new AdminClient(trust.httpClient(base, timeout), base, token, timeout);
    }

    /** The admin listener's base URL ({@code http(s)://host:port}), validated. */
    URI base() {
        String url = adminUrl != null ? adminUrl
                : "http://127.0.0.1:" + Settings.fromEnvironment().get(ConfigKeys.ADMIN_PORT);
        return BaseUrl.parse(url, "--admin-url", false, this::usage);
    }

    /** The command's standard output. */
    PrintWriter out() {
        return mixee.commandLine().getOut();
    }

    /** The command's error output (progress and problems). */
    PrintWriter err() {
        return mixee.commandLine().getErr();
    }

    ParameterException usage(String msg) {
        return new ParameterException(mixee.commandLine(), msg);
    }
}
