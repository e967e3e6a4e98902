package im.infra.config;

/** A configuration value is missing or invalid; the message always names the key. Fatal at start. */
public final class ConfigException extends RuntimeException {
    public ConfigException(String key, String problem) {
        super(key + ": " + problem);
    }
}
