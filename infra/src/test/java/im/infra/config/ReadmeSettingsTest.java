package im.infra.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The README's settings table lists every key with its default and its description, so the docs cannot drift. */
class ReadmeSettingsTest {
    @Test
    void everyKeyIsInTheReadmeWithItsDefaultAndDescription() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        List<String> wrong = new ArrayList<>();
        for (ConfigKey<?> k : ConfigKeys.all()) {
            String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
            String row = "| `" + k.name() + "` | " + def + " | " + k.doc().replace("|", "\\|") + " |";
            if (!readme.contains(row + "\n")) wrong.add(row);
        }
        assertTrue(wrong.isEmpty(), "README.md's settings table lacks these rows (name, default and the key's description in"
                + " ConfigKeys, the one home of both):\n" + String.join("\n", wrong));
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
