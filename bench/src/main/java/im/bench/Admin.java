package im.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The admin HTTP API of a platform the bench started, with retries of what may succeed later (503, I/O errors). */
final class Admin {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private final String base;

    Admin(int port) {
        this.base = "http://127.0.0.1:" + port;
    }

    void user(String user) throws Exception {
        post("/admin/users", JSON.createObjectNode().put("user", user).put("name", user), true);
    }

    String device(String user, String device) throws Exception {
        JsonNode r = post("/admin/devices", JSON.createObjectNode().put("user", user).put("device", device), true);
        // null: a retry found the device registered by an attempt whose reply was lost; a reinstall issues a token
        if (r == null) r = post("/admin/devices/" + device + "/reinstall", null, false);
        return r.get("token").asText();
    }

    void conversation(String conv, String a, String b) throws Exception {
        ObjectNode body = JSON.createObjectNode().put("conv", conv).put("kind", "direct");
        body.putArray("members").add(a).add(b);
        post("/admin/conversations", body, true);
    }

    /** A GET of the admin API (200 or an exception). */
    JsonNode get(String path) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + Platform.ADMIN_TOKEN).GET().build();
        HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) throw new IllegalStateException("GET " + path + " -> " + r.statusCode() + " " + r.body());
        return JSON.readTree(r.body());
    }

    /** The reply, or null when a retried create is answered ALREADY_EXISTS (an earlier attempt committed). */
    JsonNode post(String path, ObjectNode body, boolean create) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + Platform.ADMIN_TOKEN).header("Content-Type", "application/json")
                .POST(body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body.toString())).build();
        Exception last = null;
        for (int attempt = 1; attempt <= 5; attempt++) {
            try {
                HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
                int sc = r.statusCode();
                if (sc == 200 || sc == 201) return JSON.readTree(r.body());
                if (sc == 409 && create && attempt > 1) return null;
                if (sc != 503) throw new IllegalStateException("POST " + path + " -> " + sc + " " + r.body());
                last = new IOException("POST " + path + " -> 503 " + r.body());
            } catch (IOException e) {
                last = e;
            }
            Thread.sleep(200L * attempt);
        }
        throw new IllegalStateException("POST " + path + " failed 5 times", last);
    }
}
