package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.identity.DevicePrincipal;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Concurrent cursor batches that touch the same rows in opposite orders: the group-committed
 * upserts must take their row locks in one order, so PostgreSQL never has to abort one as a
 * deadlock (which the gateway used to answer INTERNAL).
 */
@ExtendWith(ImStackExtension.class)
class CursorDeadlockIT {
    private static final int DEVICES = 4;
    private static final int CONVS = 25;
    private static final int WRITERS = 4;
    private static final int ROUNDS = 40;

    private DataSource db;

    @BeforeEach
    void setUp(TestStack stack) throws Exception {
        db = stack.dataSource();
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO users (user_id) SELECT 'u-' || i FROM generate_series(1, " + DEVICES + ") i");
            st.execute("INSERT INTO devices (device_id, user_id, token_hash)"
                    + " SELECT 'd-' || i, 'u-' || i, int4send(i) FROM generate_series(1, " + DEVICES + ") i");
            st.execute("INSERT INTO conversations (conv_id, kind, head_seq)"
                    + " SELECT 'c-' || i, 'group', 1000 FROM generate_series(1, " + CONVS + ") i");
            st.execute("INSERT INTO memberships (conv_id, user_id, from_seq)"
                    + " SELECT 'c-' || c, 'u-' || u, 1 FROM generate_series(1, " + CONVS + ") c, generate_series(1, " + DEVICES + ") u");
            // A directory of realistic size, analyzed: the planner then looks rows up by index in
            // the order the batch lists them, as in production (tiny tables get hash joins whose
            // output order happens to be the table's, which hides the problem).
            st.execute("INSERT INTO users (user_id) VALUES ('u-filler')");
            st.execute("INSERT INTO devices (device_id, user_id, token_hash)"
                    + " SELECT 'f-' || i, 'u-filler', int4send(-i) FROM generate_series(1, 20000) i");
            st.execute("INSERT INTO conversations (conv_id, kind) SELECT 'f-' || i, 'group' FROM generate_series(1, 20000) i");
            st.execute("ANALYZE");
        }
    }

    @Test
    void batchesOverlappingInOppositeOrdersNeverDeadlock() throws Exception {
        CursorService service = new CursorService(db);
        List<AckRequest> ascending = new ArrayList<>();
        for (int d = 1; d <= DEVICES; d++) {
            for (int c = 1; c <= CONVS; c++) ascending.add(new AckRequest(new DevicePrincipal("u-" + d, "d-" + d, 1), "c-" + c, 0));
        }
        CyclicBarrier start = new CyclicBarrier(WRITERS);
        ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
        try {
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                boolean reversed = w % 2 == 1;
                writers.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    for (int round = 1; round <= ROUNDS; round++) {
                        List<AckRequest> batch = new ArrayList<>(ascending.size());
                        for (AckRequest a : ascending) batch.add(new AckRequest(a.who(), a.conv(), round));
                        if (reversed) Collections.reverse(batch);
                        for (CursorService.Outcome o : service.ackBatch(batch)) {
                            long merged = o.orThrow();
                            assertTrue(merged >= round, "merged " + merged + " below the ack " + round);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : writers) f.get(120, TimeUnit.SECONDS);   // rethrows a writer's failure (a deadlock) here
        } finally {
            pool.shutdownNow();
        }
        try (Connection c = db.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*), min(delivered_seq) FROM device_cursors")) {
            rs.next();
            assertEquals(DEVICES * CONVS, rs.getInt(1));
            assertEquals(ROUNDS, rs.getLong(2), "every writer's last round is merged");
        }
    }
}
