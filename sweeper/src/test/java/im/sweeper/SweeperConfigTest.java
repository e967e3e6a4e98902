package im.sweeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigException;
import im.infra.config.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link SweeperConfig}: defaults, and errors that name the key. */
class SweeperConfigTest {
    @Test
    void defaultsComeFromTheConfigKeys() {
        SweeperConfig c = SweeperConfig.from(Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092")));
        assertEquals("k:9092", c.kafka().bootstrap());
        assertEquals("im.", c.topics().prefix());
        assertEquals(Duration.ofMillis(1000), c.sweep());
        assertEquals(Duration.ofMillis(2000), c.backoff());
        assertEquals(Duration.ofMillis(10_000), c.lease());
        assertEquals("", c.stateDir());
    }

    @Test
    void valuesAreReadAndValidated() {
        SweeperConfig c = SweeperConfig.from(Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092",
                "IM_SWEEP_MS", "500", "IM_HINT_BACKOFF_MS", "0", "IM_STATE_DIR", "/tmp/s")));
        assertEquals(Duration.ofMillis(500), c.sweep());
        assertEquals(Duration.ZERO, c.backoff());
        assertEquals("/tmp/s", c.stateDir());

        ConfigException e = assertThrows(ConfigException.class, () -> SweeperConfig.from(
                Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092", "IM_SWEEP_MS", "0"))));
        assertTrue(e.getMessage().startsWith("IM_SWEEP_MS"), e.getMessage());
        e = assertThrows(ConfigException.class, () -> SweeperConfig.from(
                Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092", "IM_HINT_BACKOFF_MS", "soon"))));
        assertTrue(e.getMessage().startsWith("IM_HINT_BACKOFF_MS"), e.getMessage());
        e = assertThrows(ConfigException.class, () -> SweeperConfig.from(Settings.of(Map.of())));
        assertTrue(e.getMessage().startsWith("IM_KAFKA_BOOTSTRAP"), e.getMessage());
    }
}
