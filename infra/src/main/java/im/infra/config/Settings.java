package im.infra.config;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * An immutable snapshot of configuration values, read once at start from the environment and
 * JVM system properties ({@code -DIM_X=...} wins over the environment). Typed getters validate
 * and throw {@link ConfigException} naming the key; components turn this into their own records.
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
    public Settings with(ConfigKey key, String value) {
        Map<String, String> m = new HashMap<>(values);
        m.put(key.name(), value);
        return new Settings(m);
    }

    /** The explicitly set values, for handing to a child process. */
    public Map<String, String> explicitValues() {
        return new TreeMap<>(values);
    }

    public String string(ConfigKey key) {
        String v = values.get(key.name());
        return v == null ? key.defaultValue() : v.trim();
    }

    public Optional<String> optional(ConfigKey key) {
        String v = string(key);
        return v.isEmpty() ? Optional.empty() : Optional.of(v);
    }

    public String required(ConfigKey key) {
        return optional(key).orElseThrow(() -> new ConfigException(key.name(), "is required"));
    }

    public long longValue(ConfigKey key, long min, long max) {
        String v = string(key);
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ConfigException(key.name(), "must be an integer, got '" + v + "'");
        }
        if (n < min || n > max) {
            throw new ConfigException(key.name(), "must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    public int intValue(ConfigKey key, int min, int max) {
        return (int) longValue(key, min, max);
    }

    public Duration millis(ConfigKey key, long min, long max) {
        return Duration.ofMillis(longValue(key, min, max));
    }

    public boolean bool(ConfigKey key) {
        String v = string(key).toLowerCase();
        switch (v) {
            case "true": case "1": case "yes": return true;
            case "false": case "0": case "no": case "": return false;
            default: throw new ConfigException(key.name(), "must be true or false, got '" + v + "'");
        }
    }
}
