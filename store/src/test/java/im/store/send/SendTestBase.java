package im.store.send;


import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.store.directory.DeviceRegistration;
import im.store.directory.Directory;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

/** The fixture of the send tests: three users with a device each, and c-ab between ana and bo. */
@ExtendWith(ImStackExtension.class)
abstract class SendTestBase {
    DataSource db;
    Directory dir;
    SendService sends;
    DevicePrincipal ana;
    DevicePrincipal bo;
    DevicePrincipal cy;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        sends = newSendService();
        ana = register("u-ana", "d-ana");
        bo = register("u-bo", "d-bo");
        cy = register("u-cy", "d-cy");
        dir.createConversation("c-ab", "direct", List.of("u-ana", "u-bo"));   // join events: seq 1, 2
    }

    /** The service under test: group commit with the default lanes. */
    SendService newSendService() {
        return new SendService(db, Faults.none(), Clock.systemUTC());
    }

    @AfterEach
    void closeSends() {
        sends.close();
    }

    DevicePrincipal register(String user, String device) {
        dir.createUser(user, user);
        DeviceRegistration r = dir.registerDevice(user, device);
        return dir.authenticate(r.token());
    }

    long count(String sql, Object... args) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    long messages() throws SQLException {
        return count("SELECT count(*) FROM events WHERE kind = 'msg'");
    }


    List<Long> msgSeqs(String conv) throws SQLException {
        List<Long> out = new ArrayList<>();
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT seq FROM events WHERE conv_id = ? ORDER BY seq")) {
            ps.setString(1, conv);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) out.add(rs.getLong(1));
            }
        }
        return out;
    }
}
