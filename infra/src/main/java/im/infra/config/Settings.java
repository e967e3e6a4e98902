package im.infra.config;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * An immutable snapshot of configuration values, read once at start from the environment and
 * JVM system properties ({@code -DIM_X=...} wins over the environment). {@link #get} returns a
 * key's typed value, validated as the key declares it, or throws {@link ConfigException} naming the
 * key; components turn this into their own records.
 */
public final class Settings {
    private final Map<String, String> values;

    private Settings(Map<String, String> values) {
        this.values = Map.copyOf(values);
        for (String name : this.values.keySet()) {
            if (!ConfigKeys.isKnown(name)) {
                throw new ConfigException(name, "unknown configuration key (see the settings table in README.md)");
            }
        }
    }

    /** The process environment plus system properties named IM_*. */
    public static Settings fromEnvironment() {
        Map<String, String> m = new HashMap<>();
        System.getenv().forEach((k, v) -> {
            if (k.startsWith("IM_")) m.put(k, v);
        });
        System.getProperties().forEach((k, v) -> {
            if (k.toString().startsWith("IM_")) m.put(k.toString(), v.toString());
        });
        return new Settings(m);
    }

    public static Settings of(Map<String, String> values) {
        return new Settings(values);
    }

    /** A copy with one value replaced (or added). */
    public Settings with(ConfigKey<?> key, String value) {
        Map<String, String> m = new HashMap<>(values);
        m.put(key.name(), value);
        return new Settings(m);
    }

    /** The explicitly set values, for handing to a child process. */
    public Map<String, String> explicitValues() {
        return new TreeMap<>(values);
    }

    /**
     * The value of a key, parsed and validated as the key declares (its default when unset); the
     * one place a value is checked, with an error that names the key.
     */
    public <T> T get(ConfigKey<T> key) {
        return key.parse(raw(key));
    }

    /** A text key's value (its default when unset). */
    public String string(ConfigKey<String> key) {
        return get(key);
    }

    /** A text key's value, empty when it is unset or blank. */
    public Optional<String> optional(ConfigKey<String> key) {
        String v = string(key);
        return v.isEmpty() ? Optional.empty() : Optional.of(v);
    }

    public String required(ConfigKey<String> key) {
        return optional(key).orElseThrow(() -> new ConfigException(key.name(), "is required"));
    }

    private String raw(ConfigKey<?> key) {
        String v = values.get(key.name());
        return v == null ? key.defaultValue() : v.trim();
    }
}
