package im.reliability;

import im.embedded.EmbeddedPg;
import im.embedded.PgStandbyPair;
import im.infra.db.DbConfig;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The campaign's PostgreSQL: one server (data kept, so it can be crashed and restarted with WAL
 * recovery), or a primary and a synchronous hot standby ({@link PgStandbyPair}) that every role
 * and the harness reach through the multi-host URL with {@code targetServerType=primary}, with the
 * pair's faults: a failover (the primary's postmaster killed, the standby promoted, then a new
 * standby rebuilt online from the new primary on the dead one's port) and a standby outage.
 */
final class StackPg implements AutoCloseable {
    private static final Duration PAIR_WAIT = Duration.ofSeconds(120);

    private final EmbeddedPg single;    // null with a pair
    private final PgStandbyPair pair;   // null with one server
    private final String url;

    private StackPg(EmbeddedPg single, PgStandbyPair pair, String database) {
        this.single = single;
        this.pair = pair;
        primary().createDatabase(database);
        this.url = pair != null ? pair.jdbcUrl(database) : single.jdbcUrl(database);
    }

    /** One server, or with {@code standby} a primary + synchronous standby, with database {@code database}. */
    static StackPg start(Path dir, boolean standby, String database) {
        return standby ? new StackPg(null, PgStandbyPair.start(dir), database)
                : new StackPg(EmbeddedPg.start(dir, 0, true), null, database);
    }

    boolean hasStandby() {
        return pair != null;
    }

    /** The URL every role uses (both servers for a pair; fixed for the whole run: a rebuilt standby takes the dead primary's port). */
    String jdbcUrl() {
        return url;
    }

    DbConfig dbConfig(int poolSize) {
        return new DbConfig(url, EmbeddedPg.USER, EmbeddedPg.PASSWORD, poolSize);
    }

    /** The server that is the primary now. */
    EmbeddedPg primary() {
        return pair != null ? pair.primary() : single;
    }

    /** PG_CRASH: SIGQUIT to the primary's postmaster ({@code pg_ctl -m immediate}), down for {@code down} ms, WAL recovery. */
    String crashPrimary(long down) {
        EmbeddedPg p = primary();
        p.crashImmediately();
        Nemesis.pause(down);
        p.restartAfterCrash();
        return pair != null ? "primary :" + p.port() : "";
    }

    /**
     * PG_FAILOVER: {@code kill -9} of the primary's postmaster, {@code down} ms (an HA manager's
     * detection time), {@code pg_promote} on the standby. First it waits until the relay's slot
     * {@code slot} is synced to the standby as a persistent failover slot: a failover before that
     * makes the relay create a new slot and skip what was committed in between (a documented
     * operational limit, docs/operations.md, not what this fault is about).
     */
    String failover(long down, String slot) {
        PgStandbyPair p = pair("PG_FAILOVER");
        long t0 = System.currentTimeMillis();
        p.awaitSlotSynced(slot, PAIR_WAIT);
        long synced = System.currentTimeMillis() - t0;
        int killed = p.primary().port();
        int promoted = p.standby().port();
        t0 = System.currentTimeMillis();
        p.killPrimary();
        Nemesis.pause(down);
        p.promoteStandby();
        return "slot synced to the standby after " + synced + " ms, primary :" + killed + " killed, standby :" + promoted
                + " promoted " + (System.currentTimeMillis() - t0) + " ms after the kill";
    }

    /** After a failover: a new synchronous standby from an online base backup of the new primary; returns the ms it took. */
    long rebuildStandby() {
        long t0 = System.currentTimeMillis();
        pair("rebuild").rebuildStandby(PAIR_WAIT);
        return System.currentTimeMillis() - t0;
    }

    /**
     * PG_STANDBY_OUTAGE: the synchronous standby crashes ({@code -m immediate}) for {@code down} ms
     * under load (commits on the primary wait meanwhile), restarts and streams as the synchronous
     * standby again.
     */
    String standbyOutage(long down) {
        PgStandbyPair p = pair("PG_STANDBY_OUTAGE");
        int port = p.standby().port();
        p.crashStandby();
        Nemesis.pause(down);
        p.restartStandby();
        long t0 = System.currentTimeMillis();
        p.awaitSyncStandby(PAIR_WAIT);
        return "standby :" + port + " down " + down + " ms, synchronous again " + (System.currentTimeMillis() - t0) + " ms after its restart";
    }

    private PgStandbyPair pair(String what) {
        if (pair == null) throw new IllegalStateException(what + " needs the standby pair (--pg-standby)");
        return pair;
    }

    @Override
    public void close() {
        if (pair != null) pair.close();
        else single.close();
    }
}
