package im.launcher.cli;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code --gateway URL} and {@code --timeout}: where a client command finds a running gateway. */
public final class GatewayOption {
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Option(names = "--gateway", paramLabel = "URL",
            description = "Base URL of a running gateway: http:// or https:// (ws:// and wss:// name the same) host:port (default: http://127.0.0.1:<IM_GATEWAY_PORT>, i.e. http://127.0.0.1:8080).")
    String gateway;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "How long to wait for a connection or a reply (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    /** The gateway's base URL ({@code http://host:port} or {@code https://host:port}), validated; ws(s):// is taken as http(s)://. */
    public URI base() {
        String url = gateway != null ? gateway
                : "http://127.0.0.1:" + Settings.fromEnvironment().get(ConfigKeys.GATEWAY_PORT);
        return BaseUrl.parse(url, "--gateway", true, this::usage);
    }

    /** The gateway's WebSocket endpoint: ws(s)://host:port/ws. */
    public URI webSocket() {
        URI b = base();
        return URI.create(("https".equals(b.getScheme()) ? "wss" : "ws") + "://" + b.getRawAuthority() + "/ws");
    }

    public Duration timeout() {
        if (timeoutSeconds < 1) throw usage("--timeout: must be at least 1 second");
        return Duration.ofSeconds(timeoutSeconds);
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
