package im.infra.db;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;

/** Where the database is and how many connections a role may hold. */
public record DbConfig(String jdbcUrl, String user, String password, int poolSize) {
    public DbConfig {
        if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
            throw new im.infra.config.ConfigException(ConfigKeys.PG_URL.name(),
                    "must be a jdbc:postgresql: URL, got '" + jdbcUrl + "'");
        }
    }

    /** From IM_PG_URL / IM_PG_USER / IM_PG_PASSWORD / IM_PG_POOL_SIZE; IM_PG_URL is required here. */
    public static DbConfig from(Settings s) {
        return new DbConfig(s.required(ConfigKeys.PG_URL), s.string(ConfigKeys.PG_USER),
                s.string(ConfigKeys.PG_PASSWORD), s.get(ConfigKeys.PG_POOL_SIZE));
    }
}
