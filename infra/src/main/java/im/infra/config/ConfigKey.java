package im.infra.config;

/**
 * One configuration key: its environment-variable name, its default (as text; empty means
 * "unset") and a one-line description. Every key the platform reads is declared in
 * {@link ConfigKeys}, which is also the source of the README's settings table.
 */
public record ConfigKey(String name, String defaultValue, String doc) {
    public ConfigKey {
        if (!name.matches("IM_[A-Z0-9_]+")) {
            throw new IllegalArgumentException("config key must look like IM_NAME: " + name);
        }
    }
}
