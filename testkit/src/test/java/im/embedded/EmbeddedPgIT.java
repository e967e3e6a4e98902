package im.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(ImStackExtension.class)
class EmbeddedPgIT {
    private static String show(Connection c, String setting) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Test
    void serverIsDurableAndReadyForLogicalDecoding(TestStack stack) throws Exception {
        try (Connection c = stack.dataSource().getConnection()) {
            assertEquals("logical", show(c, "wal_level"));
            assertEquals("on", show(c, "fsync"));
            assertEquals("on", show(c, "synchronous_commit"));
            assertTrue(show(c, "server_version").startsWith("17."), "pinned binaries are PostgreSQL 17");
        }
    }

    @Test
    void migrationsCreateTheSchema(TestStack stack) throws Exception {
        Set<String> tables = new HashSet<>();
        try (Connection c = stack.dataSource().getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")) {
            while (rs.next()) tables.add(rs.getString(1));
        }
        assertTrue(tables.containsAll(Set.of("users", "devices", "device_installs", "conversations", "memberships",
                "events", "device_cursors")), tables.toString());
    }

    @Test
    void cursorTableRejectsNegativeCursor(TestStack stack) throws Exception {
        try (Connection c = stack.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO users (user_id) VALUES ('u1')");
            st.execute("INSERT INTO devices (device_id, user_id, token_hash) VALUES ('d1', 'u1', '\\x00')");
            st.execute("INSERT INTO conversations (conv_id, kind) VALUES ('c1', 'group')");
            SQLException e = assertThrows(SQLException.class, () -> st.execute(
                    "INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('d1', 'c1', 1, -1)"));
            assertEquals("23514", e.getSQLState(), "check violation");
        }
    }

    @Test
    void eachTestGetsItsOwnDatabase(TestStack stack) {
        assertNotEquals("postgres", stack.database());
        assertTrue(stack.topicPrefix().endsWith("."));
    }
}
