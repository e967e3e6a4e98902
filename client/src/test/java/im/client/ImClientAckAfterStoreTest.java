package im.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.api.ClientOptions;
import im.client.internal.ClientFaults;
import im.protocol.Ack;
import im.protocol.ClientFrame;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * D3 on the device: when an ack reaches the server, the acked events are already on disk with
 * their committed transaction (what a restarted client reads back). The store is held back (up to a
 * second) until an ack arrives, so an SDK that acked before its store's fsync returned fails here
 * every time, not by a race.
 */
class ImClientAckAfterStoreTest {
    @TempDir
    Path dir;

    @Test
    void anAckArrivesOnlyAfterTheTransactionCoveringItCommitted() throws Exception {
        Path db = dir.resolve("bo").resolve("client.db");
        CompletableFuture<String> firstAck = new CompletableFuture<>();
        CountDownLatch ackSeen = new CountDownLatch(1);
        ClientFaults holdStore = new ClientFaults() {
            @Override
            public void beforeStore(String conv, List<Long> seqs) {
                try {
                    ackSeen.await(1, TimeUnit.SECONDS); // a correct SDK sends no ack meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (FakeGateway gw = new FakeGateway((ClientFrame f) -> {
            if (f instanceof Ack a) {
                firstAck.complete(committedCursor(db, a.conv()) >= a.seq()
                        ? "stored" : "ack of " + a.seq() + " before its transaction committed");
                ackSeen.countDown();
            }
            return FakeGateway.oneUnstoredEvent(f);
        });
             ImClient bo = FaultInjection.open(ClientOptions.of(gw.uri(), "t-bo", dir.resolve("bo")), holdStore)) {
            bo.connect();
            assertEquals("stored", firstAck.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * The cursor of {@code conv} as a client restarted now would read it: a copy of the database and
     * its WAL, opened apart (the SDK holds its file in exclusive locking mode, so no second connection
     * reads it while it is open); recovery keeps only committed transactions.
     */
    private static long committedCursor(Path db, String conv) {
        if (!Files.exists(db)) {
            return 0;
        }
        Path copy;
        try {
            copy = Files.createTempDirectory("committed").resolve("client.db");
            Files.copy(db, copy);
            Path wal = db.resolveSibling(db.getFileName() + "-wal");
            if (Files.exists(wal)) Files.copy(wal, copy.resolveSibling("client.db-wal"));
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + copy);
             PreparedStatement ps = c.prepareStatement("SELECT cursor FROM convs WHERE conv = ?")) {
            ps.setString(1, conv);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
