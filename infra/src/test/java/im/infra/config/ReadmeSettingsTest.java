package im.infra.config;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README's settings table lists every key with its default, so the docs cannot drift. */
class ReadmeSettingsTest {
    @Test
    void everyKeyIsInTheReadmeWithItsDefault() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        for (ConfigKey k : ConfigKeys.all()) {
            String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
            assertTrue(readme.contains("| `" + k.name() + "` | " + def + " |"),
                    "README.md settings table lacks a row for " + k.name() + " with default " + def);
        }
    }
}
