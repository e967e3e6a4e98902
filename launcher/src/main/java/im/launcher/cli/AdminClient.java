package im.launcher.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.api.CaFile;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateException;
import java.time.Duration;

/**
 * The admin API of a running gateway over HTTP (docs/operations.md). Every failure becomes a
 * {@link CliException} with one line: the gateway could not be reached, did not answer in time,
 * or answered an error ({@code admin API: 404 NOT_FOUND no user u-x}).
 */
public final class AdminClient {
    static final ObjectMapper JSON = new ObjectMapper();

    /** {@code value} (a record of the protocol) as one line of JSON, for {@code --json} output. */
    static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + value + " as JSON", e);
        }
    }

    /** Where the gateway is, the admin token, and how long a connection or a reply may take. */
    private final Target target;
    private final HttpClient http;

    private record Target(URI base, String token, Duration timeout) {}

    /** Requests go through {@code http} (its trust: see {@link CaFileOption}). */
    public AdminClient(HttpClient http, URI base, String token, Duration timeout) {
        target = new Target(base, token, timeout);
        this.http = http;
    }

    /** One path segment, percent-encoded (ids are plain, but a typo must not change the path). */
    public static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    public JsonNode get(String path) {
        return call("GET", path, null);
    }

    public JsonNode post(String path, JsonNode body) {
        return call("POST", path, body);
    }

    public JsonNode put(String path) {
        return call("PUT", path, null);
    }

    public JsonNode delete(String path) {
        return call("DELETE", path, null);
    }

    private JsonNode call(String method, String path, JsonNode body) {
        URI base = target.base();
        Duration timeout = target.timeout();
        HttpRequest.BodyPublisher publisher;
        try {
            publisher = body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(timeout)
                .header("Authorization", "Bearer " + target.token())
                .header("Content-Type", "application/json")
                .method(method, publisher)
                .build();
        HttpResponse<String> resp;
        try {
            resp = http.send(req, HttpResponse.BodyHandlers.ofString());
        } catch (HttpConnectTimeoutException e) {
            throw new CliException("cannot reach the admin API at " + base + ": no connection within " + timeout.toSeconds() + " s");
        } catch (HttpTimeoutException e) {
            throw new CliException("the admin API at " + base + " did not answer within " + timeout.toSeconds() + " s");
        } catch (IOException e) {
            CertificateException rejected = CaFile.rejection(e);
            if (rejected != null) {
                throw new CliException("cannot connect to " + base + ": the admin listener's certificate is not accepted (" + rejected.getMessage()
                        + "); pass --ca-file with the CA that signed it (or set IM_CA_FILE), and an --admin-url host it was issued for");
            }
            throw new CliException("cannot reach the admin API at " + base + ": " + describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException("interrupted");
        }
        JsonNode reply;
        try {
            reply = JSON.readTree(resp.body());
        } catch (JsonProcessingException e) {
            reply = null;
        }
        if (resp.statusCode() / 100 == 2 && reply != null && reply.isObject()) return reply;
        if (reply != null && reply.hasNonNull("error")) {
            throw new CliException("admin API: " + resp.statusCode() + " " + reply.get("error").asText() + " "
                    + reply.path("msg").asText(""));
        }
        throw new CliException("admin API: unexpected HTTP " + resp.statusCode() + " from " + base + path
                + " (is this a gateway's admin listener? It is on IM_ADMIN_PORT, not the public port)");
    }

    /** A short reason for a failed connection: "connection refused", "unknown host x", ... */
    static String describe(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ConnectException) {
                String m = t.getMessage();
                return m == null || m.toLowerCase(java.util.Locale.ROOT).contains("refused") ? "connection refused" : m;
            }
            if (t instanceof UnresolvedAddressException || t instanceof UnknownHostException) return "unknown host";
            if (t instanceof HttpTimeoutException) return "timed out";
        }
        Throwable root = e;
        while (root.getCause() != null) root = root.getCause();
        return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
    }
}
