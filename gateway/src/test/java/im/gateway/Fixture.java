package im.gateway;

import im.store.directory.Directory;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.List;
import javax.sql.DataSource;

/**
 * The seed's cast, created through the directory: users ana, bo and cy with one device each
 * (cy is not in c-ab), and the direct conversation c-ab (join events seq 1 and 2).
 */
public final class Fixture {
    public static final String ADMIN_TOKEN = "test-admin-token-0123456789";

    public final DataSource db;
    public final Directory dir;
    public final String anaToken;
    public final String boToken;
    public final String cyToken;

    public Fixture(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        for (String u : List.of("u-ana", "u-bo", "u-cy")) dir.createUser(u, u.substring(2));
        anaToken = dir.registerDevice("u-ana", "d-ana").token();
        boToken = dir.registerDevice("u-bo", "d-bo").token();
        cyToken = dir.registerDevice("u-cy", "d-cy").token();
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));
    }

    public long count(String sql, Object... args) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    public long messages() {
        return count("SELECT count(*) FROM events WHERE kind = 'msg'");
    }

    public long head(String conv) {
        return count("SELECT head_seq FROM conversations WHERE conv_id = ?", conv);
    }
}
