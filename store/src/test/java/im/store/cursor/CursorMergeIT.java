package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.Cursor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The cursor merge has one rule ({@link Cursor#merge}) and two places that apply it: the sweeper in
 * Java, the cursor service's {@link CursorService#UPSERT} in SQL. Each case here stores a cursor,
 * runs the upsert with an incoming one, and asserts the row equals what the Java rule returns.
 */
@ExtendWith(ImStackExtension.class)
class CursorMergeIT {
    /** A stored cursor, an incoming one, and a name for the failure message. */
    private record Case(String name, Cursor stored, Cursor incoming) {}

    private static final List<Case> CASES = List.of(
            new Case("same epoch, higher seq", new Cursor(2, 5), new Cursor(2, 7)),
            new Case("same epoch, lower seq", new Cursor(2, 5), new Cursor(2, 3)),
            new Case("same epoch, equal seq", new Cursor(2, 5), new Cursor(2, 5)),
            new Case("higher epoch, lower seq", new Cursor(2, 5), new Cursor(3, 1)),
            new Case("higher epoch, higher seq", new Cursor(2, 5), new Cursor(3, 9)),
            new Case("higher epoch, seq 0", new Cursor(2, 5), new Cursor(3, 0)),
            new Case("lower epoch, lower seq", new Cursor(2, 5), new Cursor(1, 2)),
            new Case("lower epoch, higher seq", new Cursor(2, 5), new Cursor(1, 9)));

    @Test
    void theUpsertMergesEveryCaseAsTheJavaRuleDoes(TestStack stack) throws Exception {
        try (Connection c = stack.dataSource().getConnection()) {
            try (Statement st = c.createStatement()) {
                st.execute("INSERT INTO users (user_id) VALUES ('u-m');"
                        + " INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('c-m', 'group', 20)");
            }
            for (int i = 0; i < CASES.size(); i++) {
                Case k = CASES.get(i);
                String device = "d-m" + i;
                try (Statement st = c.createStatement()) {
                    st.execute("INSERT INTO devices (device_id, user_id, token_hash) VALUES ('" + device + "', 'u-m', '\\x0" + i + "')");
                    st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('"
                            + device + "', 'c-m', " + k.stored().epoch() + ", " + k.stored().delivered() + ")");
                }
                try (PreparedStatement ps = c.prepareStatement(CursorService.UPSERT)) {
                    ps.setArray(1, c.createArrayOf("text", new String[] {device}));
                    ps.setArray(2, c.createArrayOf("text", new String[] {"c-m"}));
                    ps.setArray(3, c.createArrayOf("int4", new Integer[] {(int) k.incoming().epoch()}));
                    ps.setArray(4, c.createArrayOf("int8", new Long[] {k.incoming().delivered()}));
                    ps.executeQuery().close();
                }
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT install_epoch, delivered_seq FROM device_cursors WHERE device_id = ? AND conv_id = 'c-m'")) {
                    ps.setString(1, device);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        assertEquals(k.stored().merge(k.incoming().epoch(), k.incoming().delivered()),
                                new Cursor(rs.getLong(1), rs.getLong(2)), k.name());
                    }
                }
            }
        }
    }
}
