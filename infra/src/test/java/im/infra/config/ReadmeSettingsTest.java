package im.infra.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The README's settings table lists every key with its default, so the docs cannot drift. */
class ReadmeSettingsTest {
    @Test
    void everyKeyIsInTheReadmeWithItsDefault() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        for (ConfigKey<?> k : ConfigKeys.all()) {
            String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
            assertTrue(readme.contains("| `" + k.name() + "` | " + def + " |"),
                    "README.md settings table lacks a row for " + k.name() + " with default " + def);
        }
    }

    @Test
    void everyKeyInTheReadmeTableIsDeclared() throws Exception {
        Matcher m = Pattern.compile("(?m)^\\| `(IM_[A-Z0-9_]+)` \\|").matcher(Files.readString(Path.of("..", "README.md")));
        int rows = 0;
        while (m.find()) {
            rows++;
            assertTrue(ConfigKeys.isKnown(m.group(1)), "README.md documents " + m.group(1) + ", which ConfigKeys does not declare");
        }
        assertEquals(ConfigKeys.all().size(), rows, "one README row per declared key");
    }
}
