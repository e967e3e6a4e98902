package im.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.infra.config.ConfigException;
import im.infra.config.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RelayConfigTest {
    private static RelayConfig cfg(String url) {
        return RelayConfig.from(Settings.of(Map.of("IM_PG_URL", url, "IM_KAFKA_BOOTSTRAP", "k:9092")));
    }

    @Test
    void aSingleHostUrlIsUsedAsItIs() {
        RelayConfig c = cfg("jdbc:postgresql://db:5432/im");
        assertEquals("im", c.database());
        assertEquals("jdbc:postgresql://db:5432/im", c.jdbcUrl());
    }

    @Test
    void aMultiHostUrlAlwaysTargetsThePrimary() {
        RelayConfig c = cfg("jdbc:postgresql://a:5432,b:5433/im?sslmode=disable");
        assertEquals("im", c.database());
        assertEquals("jdbc:postgresql://a:5432,b:5433/im?sslmode=disable&targetServerType=primary", c.jdbcUrl());
        assertEquals("jdbc:postgresql://a,b/im?targetServerType=primary", cfg("jdbc:postgresql://a,b/im").jdbcUrl());
        assertEquals("jdbc:postgresql://a,b/im?targetServerType=primary",
                cfg("jdbc:postgresql://a,b/im?targetServerType=primary").jdbcUrl(), "not added twice");
    }

    @Test
    void aUrlWithoutDatabaseIsRefusedNamingTheKey() {
        ConfigException e = assertThrows(ConfigException.class, () -> cfg("jdbc:postgresql://a,b/"));
        assertEquals("IM_PG_URL: names no database", e.getMessage());
        assertThrows(ConfigException.class, () -> cfg("jdbc:postgresql://a:5432"));
        assertThrows(ConfigException.class, () -> cfg("postgresql://a/im"));
    }
}
