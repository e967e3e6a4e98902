package im.infra.config;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * One configuration key, declared once with everything about it (Kafka's {@code ConfigDef} is the
 * model): its environment-variable name, its type, its default (as text; empty means "unset"),
 * the range or rule a value must satisfy, and a one-line description. {@link Settings#get} parses
 * and validates a value by its key, so a call site reads a typed value and never repeats a range.
 * Every key the platform reads is declared in {@link ConfigKeys}, which is also the source of the
 * README's settings table; a key declared elsewhere can never get a value, since {@link Settings}
 * rejects names that {@code ConfigKeys} does not list.
 *
 * @param <T>          the type a value is read as
 * @param name         the environment variable, {@code IM_*}
 * @param type         what a value is read as
 * @param defaultValue the default as text; empty means unset
 * @param range        the allowed range, e.g. {@code 1-200}, or empty when any text is taken
 * @param doc          the one-line description of the README's settings table
 * @param parser       parses and validates a (trimmed) value; its error names this key
 */
public record ConfigKey<T>(String name, Class<T> type, String defaultValue, String range, String doc,
                           Function<String, T> parser) {

    /** A key must look like {@code IM_NAME} and have a default (empty for none). */
    public ConfigKey {
        if (!name.matches("IM_[A-Z0-9_]+")) {
            throw new IllegalArgumentException("config key must look like IM_NAME: " + name);
        }
        Objects.requireNonNull(defaultValue, "defaultValue");
    }

    /** Text, taken as it is (trimmed); empty means unset. */
    static ConfigKey<String> text(String name, String def, String doc) {
        return new ConfigKey<>(name, String.class, def, "", doc, v -> v);
    }

    /** An int from {@code min} to {@code max}. */
    static ConfigKey<Integer> integer(String name, String def, int min, int max, String doc) {
        return new ConfigKey<>(name, Integer.class, def, min + "-" + max, doc, v -> (int) parseLong(name, v, min, max));
    }

    /** A duration in milliseconds from {@code min} to {@code max}. */
    static ConfigKey<Duration> millis(String name, String def, long min, long max, String doc) {
        return new ConfigKey<>(name, Duration.class, def, min + "-" + max + " ms", doc, v -> Duration.ofMillis(parseLong(name, v, min, max)));
    }

    /** A duration in seconds from {@code min} to {@code max}. */
    static ConfigKey<Duration> seconds(String name, String def, long min, long max, String doc) {
        return new ConfigKey<>(name, Duration.class, def, min + "-" + max + " s", doc, v -> Duration.ofSeconds(parseLong(name, v, min, max)));
    }

    /** Parses and validates a (trimmed) value; the error names this key. */
    T parse(String value) {
        return parser.apply(value);
    }

    private static long parseLong(String name, String v, long min, long max) {
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ConfigException(name, "must be an integer, got '" + v + "'");
        }
        if (n < min || n > max) {
            throw new ConfigException(name, "must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    @Override
    public String toString() {
        return name;
    }
}
