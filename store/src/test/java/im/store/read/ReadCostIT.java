package im.store.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.identity.DevicePrincipal;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A page costs its own size, not the user's conversation count: in a user's 10,000 conversations,
 * the plans of a {@code sub} page and of a {@code catchup} page walk memberships_by_user in order
 * under their LIMIT (no sort, no hash of all of them), and read about the rows they return.
 */
@ExtendWith(ImStackExtension.class)
class ReadCostIT {
    private static final int CONVERSATIONS = 10_000;
    private static final ObjectMapper JSON = new ObjectMapper();
    private DataSource db;

    @BeforeEach
    void setUp(TestStack stack) throws SQLException {
        db = stack.dataSource();
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO users(user_id) VALUES ('u-ana'), ('u-bo')");
            st.execute("INSERT INTO devices(device_id, user_id, token_hash) VALUES ('d-ana', 'u-ana', '\\x00'::bytea)");
            String ids = " FROM generate_series(1, " + CONVERSATIONS + ") i";
            String conv = "'c-x' || lpad(i::text, 5, '0')";
            st.execute("INSERT INTO conversations(conv_id, kind, head_seq, members) SELECT " + conv + ", 'group', 2, 2" + ids);
            st.execute("INSERT INTO memberships(conv_id, user_id, from_seq) SELECT " + conv + ", 'u-ana', 1" + ids);
            st.execute("INSERT INTO memberships(conv_id, user_id, from_seq) SELECT " + conv + ", 'u-bo', 2" + ids);
            st.execute("INSERT INTO events(conv_id, seq, kind, mid, sender, body) SELECT " + conv + ", 1, 'join', gen_random_uuid(), 'u-ana', ''" + ids);
            st.execute("INSERT INTO events(conv_id, seq, kind, mid, sender, body) SELECT " + conv + ", 2, 'join', gen_random_uuid(), 'u-bo', ''" + ids);
            // the device acknowledged every conversation but one in 20
            st.execute("INSERT INTO device_cursors(device_id, conv_id, install_epoch, delivered_seq) SELECT 'd-ana', " + conv + ", 1, 2"
                    + ids + " WHERE i % 20 <> 0");
            st.execute("ANALYZE");
        }
    }

    /** The plan of {@code sql} run with {@code args} in place of its parameters, as EXPLAIN ANALYZE reports it. */
    private JsonNode plan(String sql, Object... args) throws Exception {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)) {
            for (int i = 0; i < args.length; i++) ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return JSON.readTree(rs.getString(1)).get(0).get("Plan");
            }
        }
    }

    private static List<String> nodeTypes(JsonNode node, List<String> out) {
        out.add(node.path("Node Type").asText());
        node.path("Plans").forEach(p -> nodeTypes(p, out));
        return out;
    }

    /** The scan of the user's memberships that drives the page: the Limit's child. */
    private static JsonNode driver(JsonNode plan) {
        assertEquals("Limit", plan.path("Node Type").asText(), plan.toPrettyString());
        JsonNode scan = plan.path("Plans").get(0);
        assertEquals("memberships_by_user", scan.path("Index Name").asText(), scan.toPrettyString());
        return scan;
    }

    @Test
    void aSubPageReadsItsPageOfMemberships() throws Exception {
        JsonNode plan = plan(ConversationReader.CONVERSATIONS, "d-ana", "u-ana", "c-x05000", 501);
        List<String> types = nodeTypes(plan, new ArrayList<>());
        assertFalse(types.contains("Sort") || types.contains("Hash"), "no sort or hash over the user's conversations: " + types);
        assertEquals(501, driver(plan).path("Actual Rows").asLong(), "the page and one more, out of 5,000 after c-x05000");

        ConversationReader reader = new ConversationReader(db);
        DevicePrincipal ana = new DevicePrincipal("u-ana", "d-ana", 1);
        ConvPage page = reader.conversations(ana, "c-x05000", 500);
        assertEquals(500, page.convs().size());
        assertEquals("c-x05001", page.convs().get(0).conv());
        assertTrue(page.more());
    }

    @Test
    void aCatchupPageReadsTheMembershipsUpToItsLastConversationBehind() throws Exception {
        int limit = 30;
        JsonNode plan = plan(ConversationReader.BEHIND, "d-ana", "u-ana", "c-x05000", limit + 2);
        List<String> types = nodeTypes(plan, new ArrayList<>());
        assertFalse(types.contains("Sort") || types.contains("Hash"), "no sort or hash over the user's conversations: " + types);
        JsonNode scan = driver(plan);
        assertEquals(limit + 2, plan.path("Actual Rows").asLong());
        // one conversation in 20 is behind: 32 of them are found within about 640 memberships, not 5,000
        assertTrue(scan.path("Actual Rows").asLong() + scan.path("Rows Removed by Filter").asLong() <= 20 * (limit + 2) + 20,
                scan.toPrettyString());

        ConversationReader reader = new ConversationReader(db);
        CatchUpPage page = reader.catchUp(new DevicePrincipal("u-ana", "d-ana", 1), null, limit, Long.MAX_VALUE);
        assertEquals(limit, page.events().size());
        assertTrue(page.more());
        assertEquals("c-x00020", page.events().get(0).conv());
    }
}
