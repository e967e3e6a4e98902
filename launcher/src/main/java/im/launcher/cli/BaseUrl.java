package im.launcher.cli;

import java.net.URI;
import java.util.function.Function;
import picocli.CommandLine.ParameterException;

/** A client command's base URL option ({@code --gateway}, {@code --admin-url}): {@code http(s)://host:port}, validated. */
final class BaseUrl {
    private BaseUrl() {}

    /**
     * {@code url} as {@code http://host:port} or {@code https://host:port}; with {@code webSocketToo},
     * {@code ws://} and {@code wss://} (with or without the path {@code /ws}) are taken as the same.
     * Anything else is a usage error naming {@code option}.
     */
    static URI parse(String url, String option, boolean webSocketToo, Function<String, ParameterException> usage) {
        URI uri;
        try {
            uri = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        } catch (IllegalArgumentException e) {
            throw usage.apply(option + ": not a URL: " + url);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme();
        boolean known = switch (scheme) {
            case "http", "https" -> true;
            case "ws", "wss" -> webSocketToo;
            default -> false;
        };
        String path = uri.getPath();
        boolean noPath = path == null || path.isEmpty() || (webSocketToo && path.equals("/ws"));
        if (!known || uri.getHost() == null || !noPath) {
            throw usage.apply(option + ": expected http://host:port or https://host:port, got " + url);
        }
        boolean tls = "https".equals(scheme) || "wss".equals(scheme);
        return URI.create((tls ? "https" : "http") + "://" + uri.getRawAuthority());
    }
}
