package im.reliability;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The campaign's admin API client (membership changes, reinstalls), as an operator uses it. */
final class AdminHttp {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    /** Each gateway's admin listener. */
    private final int[] adminPorts;

    AdminHttp(int[] adminPorts) {
        this.adminPorts = adminPorts;
    }

    /**
     * {@code method path} (e.g. {@code PUT /admin/conversations/g0/members/u01}) on gateway {@code gw};
     * {@code timeout} null waits as long as the gateway takes (a reinstall must not be given up on
     * while it may still commit).
     */
    HttpResponse<String> send(int gw, String method, String path, Duration timeout) throws IOException, InterruptedException {
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPorts[gw] + path))
                .header("Authorization", "Bearer " + Stack.ADMIN_TOKEN)
                .method(method, HttpRequest.BodyPublishers.noBody());
        if (timeout != null) req.timeout(timeout);
        return http.send(req.build(), HttpResponse.BodyHandlers.ofString());
    }
}
