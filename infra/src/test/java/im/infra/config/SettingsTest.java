package im.infra.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsTest {
    @Test
    void defaultsApplyWhenUnset() {
        Settings s = Settings.of(Map.of());
        assertEquals(8080, s.intValue(ConfigKeys.GATEWAY_PORT, 0, 65535));
        assertTrue(s.optional(ConfigKeys.PG_URL).isEmpty());
    }

    @Test
    void unknownImKeyIsRejectedWithItsName() {
        ConfigException e = assertThrows(ConfigException.class, () -> Settings.of(Map.of("IM_PG_ULR", "x")));
        assertTrue(e.getMessage().startsWith("IM_PG_ULR:"), e.getMessage());
    }

    @Test
    void badNumbersNameTheKey() {
        Settings s = Settings.of(Map.of("IM_GATEWAY_PORT", "eighty"));
        ConfigException e = assertThrows(ConfigException.class, () -> s.intValue(ConfigKeys.GATEWAY_PORT, 0, 65535));
        assertEquals("IM_GATEWAY_PORT: must be an integer, got 'eighty'", e.getMessage());
        Settings t = Settings.of(Map.of("IM_GATEWAY_PORT", "70000"));
        assertThrows(ConfigException.class, () -> t.intValue(ConfigKeys.GATEWAY_PORT, 0, 65535));
    }

    @Test
    void requiredKeyMissingIsAnError() {
        ConfigException e = assertThrows(ConfigException.class, () -> Settings.of(Map.of()).required(ConfigKeys.ADMIN_TOKEN));
        assertEquals("IM_ADMIN_TOKEN: is required", e.getMessage());
    }

    @Test
    void everyKeyIsDocumented() {
        for (ConfigKey k : ConfigKeys.all()) {
            assertTrue(k.doc().length() > 10, k.name());
        }
    }
}
