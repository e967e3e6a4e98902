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
        assertEquals(8080, s.get(ConfigKeys.GATEWAY_PORT));
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
        ConfigException e = assertThrows(ConfigException.class, () -> s.get(ConfigKeys.GATEWAY_PORT));
        assertEquals("IM_GATEWAY_PORT: must be an integer, got 'eighty'", e.getMessage());
        Settings t = Settings.of(Map.of("IM_GATEWAY_PORT", "70000"));
        assertThrows(ConfigException.class, () -> t.get(ConfigKeys.GATEWAY_PORT));
    }

    @Test
    void requiredKeyMissingIsAnError() {
        ConfigException e = assertThrows(ConfigException.class, () -> Settings.of(Map.of()).required(ConfigKeys.ADMIN_TOKEN));
        assertEquals("IM_ADMIN_TOKEN: is required", e.getMessage());
    }

    @Test
    void everyKeyIsDocumented() {
        for (ConfigKey<?> k : ConfigKeys.all()) {
            assertTrue(k.doc().length() > 10, k.name());
        }
    }

    @Test
    void everyDefaultIsAValidValueOfItsKey() {
        Settings s = Settings.of(Map.of());
        for (ConfigKey<?> k : ConfigKeys.all()) {
            assertTrue(k.type().isInstance(s.get(k)), k.name() + " default '" + k.defaultValue() + "' reads as " + k.type());
        }
    }

    @Test
    void valuesAreReadAsTheKeyDeclaresThemAndOutOfRangeNamesTheKeyAndTheRange() {
        Settings s = Settings.of(Map.of("IM_SWEEP_MS", " 250 ", "IM_TOKEN_TTL_S", "60", "IM_PARTITIONS", "0"));
        assertEquals(java.time.Duration.ofMillis(250), s.get(ConfigKeys.SWEEP_MS));
        assertEquals(java.time.Duration.ofSeconds(60), s.get(ConfigKeys.TOKEN_TTL_S));
        ConfigException e = assertThrows(ConfigException.class, () -> s.get(ConfigKeys.PARTITIONS));
        assertEquals("IM_PARTITIONS: must be between 1 and 10000, got 0", e.getMessage());
        assertEquals("1-10000", ConfigKeys.PARTITIONS.range());
    }
}
