package im.launcher.cli;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Options of every command that uses the admin API: gateway, admin token, raw JSON output. */
public final class AdminOptions {
    @Mixin
    GatewayOption gateway;

    @Option(names = "--admin-token", paramLabel = "TOKEN",
            description = "Admin API token (default: the IM_ADMIN_TOKEN variable; `im platform` prints the token it uses).")
    String adminToken;

    @Option(names = "--json", description = "Print the admin API's JSON reply instead of text.")
    boolean json;

    /** A client for the admin API, or a usage error if no token is known. */
    public AdminClient client() {
        String token = adminToken != null ? adminToken : Settings.fromEnvironment().optional(ConfigKeys.ADMIN_TOKEN).orElse(null);
        if (token == null || token.isBlank()) {
            throw gateway.usage("no admin token: pass --admin-token or set IM_ADMIN_TOKEN (`im platform` prints the one it uses)");
        }
        return new AdminClient(gateway.base(), token, gateway.timeout());
    }
}
