package im.infra.ops;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;

/** Where a role's ops HTTP server listens ({@code IM_OPS_HOST}, {@code IM_OPS_PORT}; 0 = any free port). */
public record OpsConfig(String host, int port) {
    public static OpsConfig from(Settings s) {
        return new OpsConfig(s.string(ConfigKeys.OPS_HOST), s.get(ConfigKeys.OPS_PORT));
    }
}
