package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The admin API's read endpoints: user, device and conversation listings, and per-device cursors. */
@ExtendWith(ImStackExtension.class)
class AdminListingIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private InProcessGateway gw;
    private Fixture fx;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        gw = new InProcessGateway(stack);
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private record Reply(int status, JsonNode body) {}

    private Reply get(String path, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(gw.admin(path)).GET();
        if (token != null) b.header("Authorization", "Bearer " + token);
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), JSON.readTree(r.body()));
    }

    private JsonNode ok(String path) throws Exception {
        Reply r = get(path, Fixture.ADMIN_TOKEN);
        assertEquals(200, r.status(), path + ": " + r.body());
        return r.body();
    }

    @Test
    void usersAndConversationsPageByIdWithNext() throws Exception {
        JsonNode first = ok("/admin/users?limit=2");
        assertEquals(2, first.get("users").size());
        assertEquals("u-ana", first.get("users").get(0).get("user").asText());
        assertEquals("ana", first.get("users").get(0).get("name").asText());
        assertEquals(1, first.get("users").get(0).get("devices").asInt());
        assertEquals("u-bo", first.get("next").asText());
        JsonNode rest = ok("/admin/users?limit=2&after=u-bo");
        assertEquals(1, rest.get("users").size());
        assertEquals("u-cy", rest.get("users").get(0).get("user").asText());
        assertTrue(rest.get("next").isNull());
        assertEquals(3, ok("/admin/users").get("users").size(), "default limit");

        fx.dir.createConversation("c-g", "group", java.util.List.of("u-ana", "u-bo", "u-cy"));
        JsonNode convs = ok("/admin/conversations");
        assertEquals(2, convs.get("conversations").size());
        JsonNode ab = convs.get("conversations").get(0);
        assertEquals("c-ab", ab.get("conv").asText());
        assertEquals("direct", ab.get("kind").asText());
        assertEquals(2, ab.get("head").asLong());
        assertEquals(2, ab.get("members").asInt());
        assertEquals(3, convs.get("conversations").get(1).get("members").asInt());
        assertEquals("c-ab", ok("/admin/conversations?limit=1").get("next").asText());
    }

    @Test
    void devicesOfAUser() throws Exception {
        fx.dir.registerDevice("u-ana", "d-ana-laptop");
        JsonNode ds = ok("/admin/users/u-ana/devices");
        assertEquals("u-ana", ds.get("user").asText());
        assertEquals(2, ds.get("devices").size());
        assertEquals("d-ana", ds.get("devices").get(0).get("device").asText());
        assertEquals(1, ds.get("devices").get(0).get("epoch").asInt());
        assertTrue(ds.get("devices").get(0).get("created").asLong() > 0);
        assertFalse(ds.get("devices").get(0).has("token"), "tokens are never shown again");
        assertEquals("NOT_FOUND", get("/admin/users/u-none/devices", Fixture.ADMIN_TOKEN).body().get("error").asText());
    }

    @Test
    void cursorsShowHeadDeliveredAndLagPerDevice() throws Exception {
        try (RawSocket ana = new RawSocket(gw.ws())) {
            ana.auth(fx.anaToken);
            for (int i = 1; i <= 3; i++) {
                ana.request("{\"t\":\"send\",\"rid\":\"s" + i + "\",\"conv\":\"c-ab\",\"cmid\":\"m" + i + "\",\"body\":\"hi\"}");
            }
            assertEquals(5, ana.request("{\"t\":\"ack\",\"rid\":\"a1\",\"conv\":\"c-ab\",\"seq\":5}").get("delivered").asLong());
        }
        try (RawSocket bo = new RawSocket(gw.ws())) {
            bo.auth(fx.boToken);
            assertEquals(3, bo.request("{\"t\":\"ack\",\"rid\":\"a1\",\"conv\":\"c-ab\",\"seq\":3}").get("delivered").asLong());
        }
        fx.dir.addMember("c-ab", "u-cy");      // seq 6
        fx.dir.removeMember("c-ab", "u-cy");   // seq 7: cy saw up to 7 and stays listed as a former member
        JsonNode c = ok("/admin/conversations/c-ab/cursors");
        assertEquals("c-ab", c.get("conv").asText());
        assertEquals(7, c.get("head").asLong());
        JsonNode ds = c.get("devices");
        assertEquals(3, ds.size(), ds.toString());
        assertEquals("d-ana", ds.get(0).get("device").asText());
        assertEquals(5, ds.get(0).get("delivered").asLong());
        assertEquals(2, ds.get(0).get("lag").asLong());
        assertTrue(ds.get(0).get("updated").asLong() > 0);
        assertEquals("d-bo", ds.get(1).get("device").asText());
        assertEquals(3, ds.get(1).get("delivered").asLong());
        assertEquals(4, ds.get(1).get("lag").asLong());
        assertEquals(7, ds.get(1).get("visibleHead").asLong());
        JsonNode cy = ds.get(2);
        assertEquals("u-cy", cy.get("user").asText());
        assertFalse(cy.get("member").asBoolean());
        assertEquals(7, cy.get("visibleHead").asLong());
        assertEquals(0, cy.get("delivered").asLong());
        assertTrue(cy.get("updated").isNull());
        assertEquals(7, cy.get("lag").asLong());
        assertEquals("NOT_FOUND", get("/admin/conversations/none/cursors", Fixture.ADMIN_TOKEN).body().get("error").asText());
    }

    @Test
    void readEndpointsNeedTheTokenAndCheckTheirInput() throws Exception {
        for (String path : new String[] {"/admin/users", "/admin/conversations", "/admin/users/u-ana/devices",
                "/admin/conversations/c-ab/cursors", "/admin/lag"}) {
            assertEquals(401, get(path, null).status(), path);
            assertEquals(401, get(path, "wrong-token-wrong-token").status(), path);
        }
        for (String q : new String[] {"limit=0", "limit=1001", "limit=x", "limit=1&limit=2", "after=has%20space"}) {
            Reply r = get("/admin/users?" + q, Fixture.ADMIN_TOKEN);
            assertEquals(400, r.status(), q);
            assertEquals("INVALID", r.body().get("error").asText(), q);
        }
        for (String q : new String[] {"top=0", "top=1001", "top=x", "top=1&top=2"}) {
            Reply r = get("/admin/lag?" + q, Fixture.ADMIN_TOKEN);
            assertEquals(400, r.status(), q);
            assertEquals("INVALID", r.body().get("error").asText(), q);
        }
        HttpResponse<String> post = http.send(HttpRequest.newBuilder(gw.admin("/admin/conversations/c-ab/cursors"))
                .header("Authorization", "Bearer " + Fixture.ADMIN_TOKEN)
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(405, post.statusCode());
    }
}
