package im.client.internal;

import im.client.api.ConversationSummary;
import im.client.api.LocalStoreException.Problem;
import im.client.api.LocalStoreException;
import im.client.api.PendingSend;
import im.client.api.ReadStatus;
import im.client.api.ReceivedEvent;
import im.protocol.CaughtUpRange;
import im.protocol.Event;
import im.protocol.ReadState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The device's local store: one SQLite database, {@code <stateDir>/client.db}, holding the received
 * events, the contiguous cursor, read mark, unread count and last message of every conversation, and
 * the outbox. WAL journal with {@code synchronous=FULL}: a transaction is on disk (the WAL fsynced)
 * when its commit returns, so a caller that acks or reports afterwards never acks anything a
 * restarted process would not see (D3), and an outbox entry whose add returned survives a crash.
 *
 * <p>One transaction per received batch (a push batch or a sync page): its new events and the cursors
 * they move commit together or not at all. A crash during a commit leaves the previous state: SQLite
 * ignores a WAL frame whose checksum does not match, and every frame after it (the torn tail of the
 * last transaction, never acked or reported).
 *
 * <p>The cursor of a conversation is contiguous: every visible event with seq &le; cursor is stored.
 * It advances over stored seqs cursor+1, cursor+2, ... and, for a sync page whose {@code after} is
 * &le; the cursor, to the end of the range the page covers ({@code head} when {@code more} is false,
 * else the last event's seq), which may include seqs this device cannot see. A push batch's cursor
 * move is thus determined by the stored events, and is not written with them: the conversation rows
 * are written every {@link #CONV_SYNC_CHUNK} events and rebuilt at open from the events after them.
 * A sync page's move is written in its transaction.
 *
 * <p>Events are clustered by conversation and seq: an event's key (the table's rowid) is its
 * conversation's number shifted left by {@link #SEQ_BITS} bits, or'ed with its seq. A received
 * event thus writes one B-tree page (no second index keyed by conversation and seq), and a page of
 * a conversation is one range of the table. Each event also gets an insertion number, {@code n}
 * (not indexed): the search index's rowid, so that search lists the latest stored first.
 *
 * <p>Memory: one small row per conversation (cursor, last seq, read state, unread count), nothing
 * per event; events are read from the database page by page.
 *
 * <p>Unread counts follow docs/protocol.md, "Read state and unread counts": each conversation row keeps
 * the latest read state the server gave ({@code read_seq} the read cursor, {@code read_unread},
 * {@code read_head}; {@link #applyReadState} keeps the latest by that rule) and, in {@code unread}, the
 * messages of other users stored above {@code read_head}: kept per stored event (O(1), a duplicate
 * never counts; in memory at once, in the row when the rows are written, see {@link #CONV_SYNC_CHUNK}),
 * recounted only above the new head when a newer state is applied. The unread count now is
 * {@code read_unread + unread}, read from memory.
 *
 * <p>Text search uses an FTS5 index (word tokens, unicode61), brought up to date in chunks of
 * {@link #FTS_CHUNK} events inside a batch's transaction and before every search.
 *
 * <p>Schema versions: {@code PRAGMA user_version}; a database of a newer schema than {@link #SCHEMA_VERSION}
 * is refused ({@link Problem#NEWER_SCHEMA}), a file that is not a SQLite database or that SQLite finds
 * damaged is refused ({@link Problem#DAMAGED}); neither is ever repaired or recreated here.
 *
 * <p>Thread-safe: every method is synchronized on the store (one JDBC connection). One stateDir
 * belongs to one open client at a time ({@link StateDirLock}).
 */
public final class LocalStore implements AutoCloseable {
    public static final String FILE_NAME = "client.db";
    /**
     * The schema this SDK writes and reads; {@code user_version} of the database. 2: the conversation
     * rows may lag the events up to meta {@code convs_synced} ({@link #CONV_SYNC_CHUNK}); an SDK that
     * reads only version 1 would take lagging rows for the truth, so it refuses such a file. 3: the
     * server's read state per conversation. 4: edits and recalls (events' {@code ref} and {@code recalled},
     * the outbox's {@code kind} and {@code ref}). 5: events keyed by conversation number and seq (one page
     * written per received event instead of two), marks per conversation instead of per event id, a
     * contentless search index keyed by the insertion number. 6: a bulk join's {@code count}. Files of
     * versions 1 to 5 are upgraded at open ({@link #UPGRADES}).
     */
    static final int SCHEMA_VERSION = 6;
    /** The low bits of an event's key that hold its seq; the conversation's number is above them. */
    static final int SEQ_BITS = 40;
    /** The highest seq the store holds (2^40 - 1): a conversation's seqs count its events from 1. */
    static final long MAX_SEQ = (1L << SEQ_BITS) - 1;
    /** The highest conversation number: 2^23 - 1 conversations per store. */
    static final long MAX_CONV_NO = (1L << (63 - SEQ_BITS)) - 1;
    /** The largest page any query returns. */
    public static final int MAX_PAGE = 1000;

    /** The tables of schema 1; {@link #UPGRADES} bring them to {@link #SCHEMA_VERSION}. */
    private static final String[] SCHEMA = {
        """
        CREATE TABLE events (
          id INTEGER PRIMARY KEY,
          conv TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, mid TEXT NOT NULL,
          sender TEXT NOT NULL, cmid TEXT, body TEXT, at INTEGER NOT NULL,
          UNIQUE (conv, seq))""",
        """
        CREATE TABLE convs (
          conv TEXT PRIMARY KEY, cursor INTEGER NOT NULL DEFAULT 0,
          last_seq INTEGER NOT NULL DEFAULT 0, last_at INTEGER NOT NULL DEFAULT 0,
          read_seq INTEGER NOT NULL DEFAULT 0, unread INTEGER NOT NULL DEFAULT 0)""",
        """
        CREATE TABLE outbox (
          id INTEGER PRIMARY KEY AUTOINCREMENT, cmid TEXT NOT NULL UNIQUE, conv TEXT NOT NULL,
          body TEXT NOT NULL, created_at INTEGER NOT NULL, internal_errors INTEGER NOT NULL DEFAULT 0)""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE VIRTUAL TABLE events_fts USING fts5 (body, content='events', content_rowid='id')",
    };

    /**
     * UPGRADES[v - 1] brings schema v to v + 1, in one transaction with the new {@code user_version};
     * a new store runs them all in the transaction that creates {@link #SCHEMA}.
     * 1 to 2: the rows of version 1 were written in every batch, so they reflect every stored event.
     * 2 to 3: the server's read state per conversation. A read mark of schema 1 and 2 was local only; it
     * is kept, with its count, as a state the server has not confirmed ({@code read_known} 0), which the
     * first read state from the server replaces whatever its cursor: the server's cursor is the truth.
     * Its count may lag like the rest of the row; open adds the events above {@code convs_synced} as before.
     * 3 to 4: edits and recalls; every stored event is neither.
     * 4 to 5: every conversation gets a number ({@code no}, its row's rowid); the events are copied into
     * a table keyed by (number, seq), their id kept as the insertion number {@code n}; the search index is
     * rebuilt contentless over every event ({@code fts_seq} each conversation's highest seq). The marks
     * become per conversation: {@code synced_seq} 0 and the rows' last message and unread count 0, so the
     * first open replays every event into the rows (O(history), once), as it replays the events above
     * the mark after a kill. Then {@link #open} vacuums the file once: the replaced tables' pages would
     * otherwise stay in it as free pages.
     * 5 to 6: a bulk join's {@code count}; the events stored before read 0 (the server's count is not
     * asked for again).
     */
    private static final String[][] UPGRADES = {
        {
            "INSERT OR REPLACE INTO meta (key, value) SELECT 'convs_synced', coalesce(max(id), 0) FROM events",
        },
        {
            "ALTER TABLE convs ADD COLUMN read_head INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE convs ADD COLUMN read_unread INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE convs ADD COLUMN read_known INTEGER NOT NULL DEFAULT 0",
            "UPDATE convs SET read_head = read_seq",   // unread already counts the messages above it
        },
        {
            "ALTER TABLE events ADD COLUMN ref INTEGER",
            "ALTER TABLE events ADD COLUMN recalled INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX events_ref ON events (conv, ref) WHERE ref IS NOT NULL",
            "ALTER TABLE outbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'msg'",
            "ALTER TABLE outbox ADD COLUMN ref INTEGER NOT NULL DEFAULT 0",
        },
        {
            "INSERT OR IGNORE INTO convs (conv) SELECT DISTINCT conv FROM events",
            "ALTER TABLE convs ADD COLUMN no INTEGER",
            "UPDATE convs SET no = rowid",
            "CREATE UNIQUE INDEX convs_no ON convs (no)",
            "ALTER TABLE convs ADD COLUMN synced_seq INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE convs ADD COLUMN fts_seq INTEGER NOT NULL DEFAULT 0",
            "UPDATE convs SET last_seq = 0, last_at = 0, unread = 0",   // rebuilt by the replay at open
            """
            CREATE TABLE events5 (
              id INTEGER PRIMARY KEY, n INTEGER NOT NULL,
              conv TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, mid TEXT NOT NULL,
              sender TEXT NOT NULL, cmid TEXT, body TEXT, at INTEGER NOT NULL,
              ref INTEGER, recalled INTEGER NOT NULL DEFAULT 0)""",
            "INSERT INTO events5 SELECT (c.no << " + SEQ_BITS + ") | e.seq, e.id, e.conv, e.seq, e.kind, e.mid, e.sender, e.cmid,"
                + " e.body, e.at, e.ref, e.recalled FROM events e JOIN convs c ON c.conv = e.conv",
            "DROP TABLE events_fts",
            "DROP TABLE events",
            "ALTER TABLE events5 RENAME TO events",
            "CREATE INDEX events_ref ON events (conv, ref) WHERE ref IS NOT NULL",
            // rid: the hit's key, stored (contentless_unindexed); nothing else of an event is. Note: a DROP
            // of this table (SQLite 3.53) leaves its shadow table events_fts_content; drop that too.
            "CREATE VIRTUAL TABLE events_fts USING fts5 (body, rid UNINDEXED, content='', contentless_delete=1,"
                + " contentless_unindexed=1)",
            "INSERT INTO events_fts (rowid, body, rid) SELECT n, body, id FROM events WHERE body IS NOT NULL AND recalled = 0",
            "UPDATE convs SET fts_seq = coalesce((SELECT max(e.id) FROM events e WHERE e.id > (convs.no << " + SEQ_BITS
                + ") AND e.id < ((convs.no + 1) << " + SEQ_BITS + ")), 0) & " + MAX_SEQ,
            "DELETE FROM meta WHERE key IN ('fts_indexed', 'convs_synced')",
            "INSERT OR REPLACE INTO meta (key, value) SELECT 'next_n', coalesce(max(n), 0) + 1 FROM events",
        },
        {
            "ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 0",
        },
    };

    /**
     * The search index is brought up to date in chunks, not per event: FTS5 writes a new index segment
     * per transaction, which made a one-event batch cost about twice as much CPU. Each conversation row
     * keeps {@code fts_seq}: its stored events up to that seq are indexed, those above it are not. A
     * batch that leaves this many events unindexed indexes them (every conversation's events above its
     * mark) in its own transaction, with the rows; a search indexes the rest first. An event stored at
     * or below its conversation's mark (a gap filled) is indexed by the batch that stores it.
     */
    static final int FTS_CHUNK = 256;

    /**
     * A push batch that only moves cursors over the events it stores does not write the conversation
     * rows (one page fewer per batch, about 7 % of its CPU): the rows lag the events. Each row keeps
     * {@code synced_seq}, its highest stored seq when it was written: it reflects its conversation's
     * stored events up to that seq and none above. A batch that stores an event at or below a row's
     * mark (a gap filled) writes the rows. They are written, and each written row's mark moved to its
     * highest stored seq, by a batch that leaves this many events unreflected, by the search index's
     * chunk, by every
     * sync or catch-up page (its cursor jumps cannot be derived from the events), before the
     * conversation list is read, by the first batch after a read state was applied (the state is
     * written with the rows, its recount reflecting every event), before the device's user changes,
     * and at close. At open each conversation's events above its mark (at most this many in all, plus
     * one batch) are applied to the rows in memory as their batches applied them: the cursor moves over
     * stored seqs, last message, unread count above the row's {@code read_head}. Meta {@code next_n},
     * written with the rows, is the next insertion number (the highest among the replayed events
     * raises it).
     */
    static final int CONV_SYNC_CHUNK = 256;

    /** {@code PRAGMA wal_autocheckpoint}: see {@link #open}. */
    static final int WAL_CHECKPOINT_PAGES = 256;

    /**
     * The columns of {@link #event(ResultSet, int)} for an events row {@code e}: the event, with the text
     * of the latest edit of a message (index {@code events_ref}: one probe per message; the latest by key,
     * which within a conversation is seq order and the index's own order, so nothing is sorted).
     */
    private static final String EVENT_COLUMNS = "e.conv, e.seq, e.kind, e.mid, e.sender, e.cmid, e.body, e.at, coalesce(e.ref, 0), e.recalled,"
            + " CASE WHEN e.kind = 'msg' AND e.recalled = 0 THEN (SELECT x.body FROM events x WHERE x.conv = e.conv AND x.ref = e.seq"
            + " AND x.kind = 'edit' ORDER BY x.id DESC LIMIT 1) END, e.count";
    /** Events an app lists as messages: an edit or a recall is shown in the message it changes. */
    private static final String LISTED = " AND e.kind NOT IN ('edit', 'recall')";

    /** What one commit changed. */
    public record Result(List<ReceivedEvent> added, Map<String, Long> cursorsBefore, Map<String, Long> cursorsAfter) {
        /** Conversations whose cursor moved, with the new cursor. */
        Map<String, Long> advanced() {
            Map<String, Long> out = new LinkedHashMap<>();
            cursorsAfter.forEach((c, v) -> {
                if (v > cursorsBefore.getOrDefault(c, 0L)) {
                    out.put(c, v);
                }
            });
            return out;
        }
    }

    /** The per-conversation row, mirrored in memory (small: no events). */
    private static final class Conv {
        /** The conversation's number: its events' keys are {@code no << SEQ_BITS | seq}. */
        final long no;
        /** The row (with {@link #no}) is in the database: written in the transaction that first needs it. */
        boolean inDb;
        /** The row reflects the stored events up to this seq (column {@code synced_seq}, see {@link #CONV_SYNC_CHUNK}). */
        long syncedSeq;
        /** The stored events up to this seq are in the search index (column {@code fts_seq}, see {@link #FTS_CHUNK}). */
        long ftsSeq;
        long cursor;
        long lastSeq;
        long lastAt;
        /**
         * The mark above which stored messages of other users are counted in {@link #unread}: the head
         * of the latest read state (column {@code read_head}; the local read mark before schema 3).
         */
        long readHead;
        /** The latest read state's cursor and unread (columns {@code read_seq}, {@code read_unread}). */
        long read;
        long readUnread;
        /** The read state came from the server (a mark of schema 1 or 2 did not: any server state replaces it). */
        boolean readKnown;
        /** Messages of other users stored above {@link #readHead} (column {@code unread}). */
        long unread;
        /** The row in the database is behind these values (see {@link #CONV_SYNC_CHUNK}). */
        boolean dirty;
        /** Of those, the read state's columns: applied since the row was last written (see {@link #applyReadStates}). */
        boolean readDirty;

        Conv(long no) {
            this.no = no;
        }

        /**
         * The key of this conversation's event at {@code seq}; a seq outside 0 to {@link #MAX_SEQ} (a
         * cursor or read head the server gave, a caller's bound) is taken as the nearer end of the range.
         */
        long key(long seq) {
            return no << SEQ_BITS | Math.min(Math.max(seq, 0), MAX_SEQ);
        }

        Conv copy() {
            Conv c = new Conv(no);
            c.inDb = inDb;
            c.syncedSeq = syncedSeq;
            c.ftsSeq = ftsSeq;
            c.cursor = cursor;
            c.lastSeq = lastSeq;
            c.lastAt = lastAt;
            c.readHead = readHead;
            c.read = read;
            c.readUnread = readUnread;
            c.readKnown = readKnown;
            c.unread = unread;
            c.dirty = dirty;
            c.readDirty = readDirty;
            return c;
        }
    }

    private final Path file;
    private final Connection db;
    private final Map<String, Conv> convs;
    /** The number of the next conversation this store sees. */
    private long nextConvNo;
    /** The insertion number of the next stored event (meta {@code next_n}, written with the rows). */
    private long nextN;
    /** Events stored since the rows were last written (see {@link #CONV_SYNC_CHUNK}). */
    private int unsynced;
    /**
     * Events stored above their conversation's {@code ftsSeq} (see {@link #FTS_CHUNK}); their conversations
     * are those whose {@code lastSeq} is above it.
     */
    private int unindexed;
    /** Some conversation's read state was applied in memory and is not in its row yet. */
    private boolean readStatesWaiting;
    private final PreparedStatement saveNextN;
    private final PreparedStatement indexRange;
    private final PreparedStatement indexOne;
    /** The device's user (from {@code authed}): its own messages are never unread. Null until known. */
    private String selfUser;
    private final PreparedStatement insertEvent;
    private final PreparedStatement insertConv;
    private final PreparedStatement updateConv;
    private final PreparedStatement updateRead;
    private final PreparedStatement countAbove;
    private final PreparedStatement seqsAbove;
    private final PreparedStatement hasEvent;
    /** Whether a recall of a seq is stored; a recall's emptying of its message and edits, out of the index first. */
    private final PreparedStatement recalledAt;
    private final PreparedStatement unindexRecalled;
    private final PreparedStatement emptyRecalled;
    /** Conversations with a stored recall: only there may an arriving message or edit already be recalled. */
    private final java.util.Set<String> withRecalls;
    /** BEGIN / COMMIT of the batch transactions, prepared once (the connection stays in autocommit mode between them). */
    private final PreparedStatement begin;
    private final PreparedStatement commitTx;
    /** ROLLBACK of a failed batch transaction. */
    private final Statement tx;
    private boolean closed;

    private LocalStore(Path file, Connection db, Map<String, Conv> convs, String selfUser, long nextN) throws SQLException {
        this.file = file;
        this.nextN = nextN;
        this.nextConvNo = convs.values().stream().mapToLong(c -> c.no).max().orElse(0) + 1;
        this.indexRange = db.prepareStatement("INSERT INTO events_fts (rowid, body, rid) SELECT n, body, id FROM events"
                + " WHERE id > ? AND id <= ? AND body IS NOT NULL AND recalled = 0");
        this.indexOne = db.prepareStatement("INSERT INTO events_fts (rowid, body, rid) VALUES (?, ?, ?)");
        this.saveNextN = db.prepareStatement("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_n', ?)");
        this.db = db;
        this.convs = convs;
        this.selfUser = selfUser;
        this.insertEvent = db.prepareStatement("INSERT OR IGNORE INTO events (id, n, conv, seq, kind, mid, sender, cmid, body, at, ref, recalled,"
                + " count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        this.recalledAt = db.prepareStatement("SELECT 1 FROM events WHERE conv = ? AND ref = ? AND kind = 'recall'");
        // The message (by key) and its edits (index events_ref), each as one lookup: no OR for the planner.
        this.unindexRecalled = db.prepareStatement("DELETE FROM events_fts WHERE rowid IN ("
                + "SELECT n FROM events WHERE id = ?1 AND seq <= ?4 AND recalled = 0"
                + " UNION ALL SELECT n FROM events WHERE conv = ?2 AND ref = ?3 AND kind = 'edit' AND seq <= ?4 AND recalled = 0)");
        this.emptyRecalled = db.prepareStatement("UPDATE events SET body = '', recalled = 1 WHERE recalled = 0 AND id IN ("
                + "SELECT ?1 UNION ALL SELECT id FROM events WHERE conv = ?2 AND ref = ?3 AND kind = 'edit')");
        this.insertConv = db.prepareStatement("INSERT INTO convs (conv, no) VALUES (?, ?)");
        this.updateConv = db.prepareStatement(
                "UPDATE convs SET cursor = ?, last_seq = ?, last_at = ?, unread = ?, synced_seq = ?, fts_seq = ? WHERE conv = ?");
        this.updateRead = db.prepareStatement(
                "UPDATE convs SET read_seq = ?, read_unread = ?, read_head = ?, read_known = 1 WHERE conv = ?");
        this.countAbove = db.prepareStatement("SELECT count(*) FROM events WHERE id > ? AND id <= ? AND kind = 'msg' AND sender IS NOT ?");
        this.seqsAbove = db.prepareStatement("SELECT seq FROM events WHERE id > ? AND id <= ? ORDER BY id");
        this.hasEvent = db.prepareStatement("SELECT 1 FROM events WHERE id = ?");
        this.withRecalls = new java.util.HashSet<>();
        try (Statement st = db.createStatement();
             ResultSet rs = st.executeQuery("SELECT DISTINCT conv FROM events WHERE ref IS NOT NULL AND kind = 'recall'")) {
            while (rs.next()) {
                withRecalls.add(rs.getString(1));   // read through events_ref: the edits and recalls, not the history
            }
        }
        this.begin = db.prepareStatement("BEGIN IMMEDIATE");
        this.commitTx = db.prepareStatement("COMMIT");
        this.tx = db.createStatement();
    }

    /**
     * Opens (or creates) the store of {@code stateDir}, creating the directory if missing. Reads the
     * conversation rows (one per conversation) and the events above their marks (at most a chunk's
     * worth, see {@link #CONV_SYNC_CHUNK}; every event once, after the upgrade to schema 5).
     *
     * @throws LocalStoreException {@link Problem#DAMAGED} if the file is not a SQLite database, is shorter than
     *         its header says, or SQLite finds it damaged; {@link Problem#NEWER_SCHEMA} if a newer SDK wrote it
     */
    public static LocalStore open(Path stateDir) throws IOException {
        Files.createDirectories(stateDir);
        Path file = stateDir.resolve(FILE_NAME);
        checkHeader(file);
        Connection db = null;
        try {
            // sqlite-jdbc's generated keys: after every INSERT it would match the SQL with a regular
            // expression and prepare, run and finalize a "SELECT last_insert_rowid()" the store never
            // reads (a statement prepared per received batch); off.
            java.util.Properties props = new java.util.Properties();
            props.setProperty("jdbc.get_generated_keys", "false");
            db = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath(), props);
            try (Statement st = db.createStatement()) {
                // One connection of one process owns the file (the state directory's lock guards it): with
                // the exclusive locking mode, set before WAL mode is entered, SQLite keeps its WAL index in
                // heap memory and takes no file locks per transaction (six fcntl calls per commit fewer).
                st.execute("PRAGMA locking_mode = EXCLUSIVE");
                st.execute("PRAGMA journal_mode = WAL");
                st.execute("PRAGMA synchronous = FULL"); // fsync the WAL at every commit: what D3 and the outbox need
                st.execute("PRAGMA secure_delete = ON"); // a recalled body's bytes are overwritten, not left in a free page
                // Checkpoint (copy the WAL into the file, two more fsyncs) every 256 pages (1 MiB), about
                // every 60 one-event batches. The WAL restarts at its start after a checkpoint and is then
                // overwritten in place; while it grows, each commit's fsync also allocates blocks and
                // writes the inode, which cost more than the extra checkpoints (measured: 4,000 pages made
                // the receive path about 20 % dearer). A small WAL also keeps recovery at open short.
                st.execute("PRAGMA wal_autocheckpoint = " + WAL_CHECKPOINT_PAGES);
                int version = intPragma(st, "user_version");
                if (version > SCHEMA_VERSION) {
                    throw new LocalStoreException(Problem.NEWER_SCHEMA, file, "schema version " + version
                            + " was written by a newer SDK; this one reads up to " + SCHEMA_VERSION
                            + " (open it with that SDK; the file is left as it is)", null);
                }
                if (version == 0) {
                    createSchema(db, st, file);
                } else {
                    upgrade(db, st, version);
                    if (version < 5) {
                        // The step to 5 replaced the events table and the search index: their old pages
                        // (half the file at 1,000,000 events) go back to the file system, once.
                        st.execute("VACUUM");
                    }
                }
                st.execute("DROP INDEX IF EXISTS convs_recent");   // written by earlier SDKs of schema 1; see conversations()
            }
            Map<String, Conv> convs = new HashMap<>();
            try (Statement st = db.createStatement();
                 ResultSet rs = st.executeQuery("SELECT conv, cursor, last_seq, last_at, read_head, read_seq, read_unread,"
                         + " read_known, unread, no, synced_seq, fts_seq FROM convs")) {
                while (rs.next()) {
                    Conv c = new Conv(rs.getLong(10));
                    c.inDb = true;
                    c.syncedSeq = rs.getLong(11);
                    c.ftsSeq = rs.getLong(12);
                    c.cursor = rs.getLong(2);
                    c.lastSeq = rs.getLong(3);
                    c.lastAt = rs.getLong(4);
                    c.readHead = rs.getLong(5);
                    c.read = rs.getLong(6);
                    c.readUnread = rs.getLong(7);
                    c.readKnown = rs.getInt(8) != 0;
                    c.unread = rs.getLong(9);
                    convs.put(rs.getString(1), c);
                }
            }
            String self = null;
            long nextN = 1;
            try (Statement st = db.createStatement();
                 ResultSet rs = st.executeQuery("SELECT key, value FROM meta")) {
                while (rs.next()) {
                    if ("user".equals(rs.getString(1))) {
                        self = rs.getString(2);
                    } else if ("next_n".equals(rs.getString(1))) {
                        nextN = Long.parseLong(rs.getString(2));
                    }
                }
            }
            LocalStore store = new LocalStore(file, db, convs, self, nextN);
            store.replayUnsynced();
            return store;
        } catch (SQLException e) {
            closeQuietly(db);
            throw error(file, "cannot open", e);
        } catch (IOException | RuntimeException e) {
            closeQuietly(db);
            throw e;
        }
    }

    private static void createSchema(Connection db, Statement st, Path file) throws SQLException, IOException {
        try (ResultSet rs = st.executeQuery("SELECT count(*) FROM sqlite_master")) {
            if (rs.next() && rs.getInt(1) > 0) {
                throw new LocalStoreException(Problem.DAMAGED, file,
                        "holds tables but no schema version (not a store of this SDK, or damaged)", null);
            }
        }
        List<String> sql = new ArrayList<>(Arrays.asList(SCHEMA));
        for (String[] step : UPGRADES) {
            sql.addAll(Arrays.asList(step));
        }
        migrate(db, st, sql, SCHEMA_VERSION);
    }

    /** Brings a store of schema {@code version} to {@link #SCHEMA_VERSION}, one transaction per step. */
    private static void upgrade(Connection db, Statement st, int version) throws SQLException {
        for (int v = version; v < SCHEMA_VERSION; v++) {
            migrate(db, st, Arrays.asList(UPGRADES[v - 1]), v + 1);
        }
    }

    /** Runs {@code statements} and sets the schema version to {@code version}, in one transaction. */
    private static void migrate(Connection db, Statement st, List<String> statements, int version) throws SQLException {
        db.setAutoCommit(false);
        try {
            for (String sql : statements) {
                st.execute(sql);
            }
            st.execute("PRAGMA user_version = " + version);
            db.commit();
        } catch (SQLException e) {
            db.rollback();
            throw e;
        } finally {
            db.setAutoCommit(true);
        }
    }

    /**
     * Refuses, before SQLite touches it, a file that is not a SQLite database or that is shorter than
     * the page count in its header (cut off). With a WAL file beside it the main file may legitimately
     * lag (a checkpoint interrupted by a crash, redone at open), so the length is only checked without one.
     */
    private static void checkHeader(Path file) throws IOException {
        if (!Files.exists(file) || Files.size(file) == 0) {
            return; // nothing was ever committed to it
        }
        ByteBuffer h = ByteBuffer.allocate(100);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (h.hasRemaining() && ch.read(h) >= 0) {
                // read the 100-byte header
            }
        }
        byte[] magic = "SQLite format 3\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        if (h.position() < 100 || !java.util.Arrays.equals(h.array(), 0, magic.length, magic, 0, magic.length)) {
            throw new LocalStoreException(Problem.DAMAGED, file, "not a SQLite database (damaged header)", null);
        }
        int pageSize = h.getShort(16) & 0xffff;
        long pageBytes = pageSize == 1 ? 65536 : pageSize;
        long pages = h.getInt(28) & 0xffffffffL;
        boolean pagesValid = h.getInt(24) == h.getInt(92);
        Path wal = file.resolveSibling(file.getFileName() + "-wal");
        boolean walHasFrames = Files.exists(wal) && Files.size(wal) > 32;
        if (pagesValid && !walHasFrames && Files.size(file) < pages * pageBytes) {
            throw new LocalStoreException(Problem.DAMAGED, file, "cut off: " + Files.size(file) + " bytes, the header says "
                    + pages + " pages of " + pageBytes, null);
        }
    }

    private static int intPragma(Statement st, String name) throws SQLException {
        try (ResultSet rs = st.executeQuery("PRAGMA " + name)) {
            return rs.next() ? rs.getInt(1) : 0;
        }
    }

    /** The database file. */
    public Path file() {
        return file;
    }

    // ------------------------------------------------------------------ cursors and events

    public synchronized long cursor(String conv) {
        Conv c = convs.get(conv);
        return c == null ? 0 : c.cursor;
    }

    public synchronized Map<String, Long> cursors() {
        TreeMap<String, Long> out = new TreeMap<>();
        convs.forEach((k, v) -> out.put(k, v.cursor));
        return out;
    }

    /** Every stored event of {@code conv} in seq order: O(the conversation); apps page with {@link #eventsBefore}. */
    public synchronized List<ReceivedEvent> events(String conv) throws IOException {
        return queryEvents("SELECT " + EVENT_COLUMNS + " FROM events e WHERE e.id > ? AND e.id <= ? ORDER BY e.id LIMIT ?",
                conv, 0, MAX_SEQ, Integer.MAX_VALUE);
    }

    synchronized boolean contains(String conv, long seq) throws IOException {
        Conv c = convs.get(conv);
        if (c == null || seq < 1 || seq > MAX_SEQ) {
            return false;
        }
        try {
            hasEvent.setLong(1, c.key(seq));
            try (ResultSet rs = hasEvent.executeQuery()) {
                return rs.next();
            }
        } catch (SQLException e) {
            throw error(file, "cannot read", e);
        }
    }

    /** The device's user: its own messages do not count as unread. Stored, so it is known before the next connect. */
    public synchronized void selfUser(String user) throws IOException {
        Objects.requireNonNull(user, "user");
        if (user.equals(selfUser)) {
            return;
        }
        syncRows(); // the unread counts of the events above the rows' marks are replayed with the stored user
        try (PreparedStatement ps = db.prepareStatement("INSERT OR REPLACE INTO meta (key, value) VALUES ('user', ?)")) {
            ps.setString(1, user);
            ps.executeUpdate();
            selfUser = user;
        } catch (SQLException e) {
            throw error(file, "cannot write", e);
        }
    }

    /** New events of {@code pushes} (not stored yet and above the cursor) per conversation, in seq order. */
    synchronized Map<String, List<ReceivedEvent>> newEvents(List<Event> pushes) throws IOException {
        Map<String, TreeMap<Long, ReceivedEvent>> fresh = new LinkedHashMap<>();
        for (Event e : pushes) {
            checkSeq(e);
            Conv c = convs.get(e.conv());
            // Above the highest stored seq nothing is stored: no read (the common case, pushes in order).
            boolean stored = c != null && e.seq() <= c.lastSeq && contains(e.conv(), e.seq());
            if (e.seq() > cursor(e.conv()) && !stored) {
                fresh.computeIfAbsent(e.conv(), k -> new TreeMap<>()).putIfAbsent(e.seq(), ReceivedEvent.of(e));
            }
        }
        Map<String, List<ReceivedEvent>> out = new LinkedHashMap<>();
        fresh.forEach((k, v) -> out.put(k, List.copyOf(v.values())));
        return out;
    }

    /** Durably stores the pushed events (duplicates are no-ops) and advances cursors over contiguous seqs. */
    public synchronized Result applyPushes(List<Event> pushes) throws IOException {
        return applyNew(newEvents(pushes));
    }

    /**
     * As {@link #applyPushes}, for what {@link #newEvents} returned with no commit since (the receive
     * lane, the store's only writer of events, looks at the new events first for its fault hooks).
     */
    synchronized Result applyNew(Map<String, List<ReceivedEvent>> fresh) throws IOException {
        return commit(fresh, Map.of());
    }

    /**
     * Durably stores one sync page of {@code conv} (the reply to {@code sync{after}}) and, if
     * {@code after} is &le; the cursor, advances the cursor to the end of the range the page covers:
     * {@code head} when {@code more} is false, else the seq of the page's last event.
     */
    public synchronized Result applyPage(String conv, long after, List<Event> events, boolean more, long head) throws IOException {
        Objects.requireNonNull(conv, "conv");
        TreeMap<Long, ReceivedEvent> page = new TreeMap<>();
        long last = after;
        for (Event e : events) {
            if (!conv.equals(e.conv())) {
                throw new IllegalArgumentException("sync page of " + conv + " holds an event of " + e.conv());
            }
            checkSeq(e);
            last = Math.max(last, e.seq());
            if (e.seq() > cursor(conv)) {
                page.putIfAbsent(e.seq(), ReceivedEvent.of(e));
            }
        }
        long upTo = more ? last : Math.max(head, last);
        Map<String, List<ReceivedEvent>> added = page.isEmpty() ? Map.of() : Map.of(conv, List.copyOf(page.values()));
        return commit(added, Map.of(conv, new long[] {after, upTo}));
    }

    /**
     * Stores a {@code caughtup} page in one transaction: each conversation's part as
     * {@link #applyPage} stores a sync page read from {@code after} with {@code more} false and head
     * {@code upTo} (its cursor moves to {@code upTo} when it was at least {@code after}).
     */
    public synchronized Result applyCatchUp(List<Event> events, List<CaughtUpRange> ranges) throws IOException {
        Map<String, long[]> covered = new LinkedHashMap<>();
        for (CaughtUpRange r : ranges) {
            covered.put(r.conv(), new long[] {r.after(), r.upTo()});
        }
        Map<String, TreeMap<Long, ReceivedEvent>> pages = new LinkedHashMap<>();
        for (Event e : events) {
            long[] r = covered.get(e.conv());
            if (r == null || e.seq() <= r[0] || e.seq() > r[1]) {
                throw new IllegalArgumentException("caughtup page holds " + e.conv() + "#" + e.seq() + " outside the ranges it names");
            }
            checkSeq(e);
            if (e.seq() > cursor(e.conv())) {
                pages.computeIfAbsent(e.conv(), k -> new TreeMap<>()).putIfAbsent(e.seq(), ReceivedEvent.of(e));
            }
        }
        Map<String, List<ReceivedEvent>> added = new LinkedHashMap<>();
        pages.forEach((conv, page) -> added.put(conv, List.copyOf(page.values())));
        return commit(added, covered);
    }

    /** Whether the store can key {@code e}: seqs count a conversation's events from 1 up to {@link #MAX_SEQ}. */
    static boolean holds(Event e) {
        return e.seq() >= 1 && e.seq() <= MAX_SEQ;
    }

    /** Refuses an event the store cannot key ({@link #holds}). */
    private static void checkSeq(Event e) {
        if (!holds(e)) {
            throw new IllegalArgumentException("event " + e.conv() + "#" + e.seq() + ": the local store holds seqs 1 to " + MAX_SEQ);
        }
    }

    /** A conversation new to this store, with the next number. */
    private Conv newConv() {
        if (nextConvNo > MAX_CONV_NO) {
            throw new IllegalStateException("the local store holds at most " + MAX_CONV_NO + " conversations");
        }
        return new Conv(nextConvNo++);
    }

    /** {@code ranges}: conv → {after, upTo} of a sync page. One transaction; memory changes only after its commit. */
    private Result commit(Map<String, List<ReceivedEvent>> candidates, Map<String, long[]> ranges) throws IOException {
        ensureOpen();
        List<String> touched = new ArrayList<>(candidates.keySet());
        for (String c : ranges.keySet()) {
            if (!touched.contains(c)) {
                touched.add(c);
            }
        }
        Map<String, Long> before = new LinkedHashMap<>();
        Map<String, Long> after = new LinkedHashMap<>();
        Map<String, Conv> next = new HashMap<>();
        List<ReceivedEvent> added = new ArrayList<>();
        boolean wrote = false;
        long n0 = nextN;
        long convNo0 = nextConvNo;
        int newlyUnindexed = 0;
        try {
            begin.execute();
            try {
                // A gap filled below a row's mark: that row must reflect it before the commit (see CONV_SYNC_CHUNK).
                boolean belowMark = false;
                for (String conv : touched) {
                    Conv c = convs.get(conv);
                    Conv n = c == null ? newConv() : c.copy();   // the read state as it is
                    long cur = n.cursor;
                    before.put(conv, cur);
                    long unread = 0;
                    List<ReceivedEvent> inserted = new ArrayList<>();
                    if (!n.inDb) {
                        wrote |= insertConv(conv, n.no);   // its number is in the database before any of its keys
                        n.inDb = true;
                    }
                    for (ReceivedEvent candidate : candidates.getOrDefault(conv, List.of())) {
                        ReceivedEvent e = insert(n, candidate);
                        if (e == null) {
                            continue; // already stored: a duplicate is a no-op
                        }
                        inserted.add(e);
                        added.add(e);
                        if (e.seq() > n.lastSeq) {
                            n.lastSeq = e.seq();
                            n.lastAt = e.at();
                        }
                        if (e.seq() > n.readHead && Event.MSG.equals(e.kind()) && !e.sender().equals(selfUser)) {
                            unread++;
                        }
                        belowMark |= e.seq() <= n.syncedSeq;
                        if (e.seq() > n.ftsSeq) {
                            newlyUnindexed++;
                        }
                    }
                    long moved = c != null && c.lastSeq > cur ? advance(n, cur) : advanceOver(cur, inserted);
                    long[] r = ranges.get(conv);
                    if (r != null && r[0] <= moved && r[1] > moved) {
                        moved = advance(n, r[1]);
                    }
                    after.put(conv, moved);
                    n.cursor = moved;
                    n.unread += unread;
                    n.dirty |= moved != cur || !inserted.isEmpty();
                    next.put(conv, n);
                }
                // A sync or catch-up page may move cursors over seqs that are not stored: not derivable
                // from the events, so the rows are written now (all of them, see CONV_SYNC_CHUNK).
                // Read states applied since the last row write go with this batch's transaction (no
                // transaction of their own, see applyReadStates). The search index's chunk writes its
                // marks with the rows.
                boolean chunk = unindexed + newlyUnindexed >= FTS_CHUNK;
                if (chunk) {
                    indexAbove(next);
                }
                boolean syncRows = chunk || belowMark || !ranges.isEmpty() || unsynced + added.size() >= CONV_SYNC_CHUNK
                        || readStatesWaiting;
                if (syncRows) {
                    writeRows(next);
                    wrote = true;
                }
                if (wrote || !added.isEmpty()) {
                    commitTx.execute(); // the commit point: the WAL is fsynced (synchronous=FULL)
                } else {
                    tx.execute("ROLLBACK");
                }
                convs.putAll(next); // committed: now memory
                unsynced += added.size();
                unindexed = chunk ? 0 : unindexed + newlyUnindexed;
                if (syncRows) {
                    syncedInMemory();
                }
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly();
                nextN = n0;   // the rolled-back inserts are gone
                nextConvNo = convNo0;
                throw e;
            }
        } catch (SQLException e) {
            throw error(file, "cannot store a batch (nothing of it was stored)", e);
        }
        return new Result(List.copyOf(added), before, after);
    }

    /** Rows this store's connection has inserted, updated or deleted since it opened (SQLite's {@code total_changes()}; tests). */
    synchronized long rowsWritten() throws SQLException {
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery("SELECT total_changes()")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Messages of other users stored above {@code head} in {@code conv}. */
    private long countAbove(Conv c, long head) throws SQLException {
        countAbove.setLong(1, c.key(head));
        countAbove.setLong(2, c.key(MAX_SEQ));
        countAbove.setString(3, selfUser);
        try (ResultSet rs = countAbove.executeQuery()) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    /**
     * Inside a transaction: writes every dirty conversation row (those of {@code next} with the values
     * of the batch under way), each with its mark at its highest stored seq, and meta {@code next_n}.
     * Memory is marked clean by {@link #syncedInMemory} once the transaction committed.
     */
    private void writeRows(Map<String, Conv> next) throws SQLException {
        Map<String, Conv> all = new HashMap<>(convs);
        all.putAll(next);
        for (Map.Entry<String, Conv> en : all.entrySet()) {
            Conv c = en.getValue();
            if (!c.dirty) {
                continue;
            }
            if (!c.inDb) {
                insertConv(en.getKey(), c.no);   // a conversation the server told of before any of its events is stored
            }
            if (c.readDirty) {
                updateRead.setLong(1, c.read);
                updateRead.setLong(2, c.readUnread);
                updateRead.setLong(3, c.readHead);
                updateRead.setString(4, en.getKey());
                updateRead.executeUpdate();
            }
            updateConv.setLong(1, c.cursor);
            updateConv.setLong(2, c.lastSeq);
            updateConv.setLong(3, c.lastAt);
            updateConv.setLong(4, c.unread);
            updateConv.setLong(5, c.lastSeq);
            updateConv.setLong(6, c.ftsSeq);
            updateConv.setString(7, en.getKey());
            updateConv.executeUpdate();
        }
        saveNextN.setString(1, Long.toString(nextN));
        saveNextN.executeUpdate();
    }

    /** After the commit of {@link #writeRows}: the rows now reflect every stored event. */
    private void syncedInMemory() {
        convs.values().forEach(c -> {
            if (c.dirty) {
                c.syncedSeq = c.lastSeq;
                c.inDb = true;
            }
            c.dirty = false;
            c.readDirty = false;
        });
        unsynced = 0;
        readStatesWaiting = false;
    }

    /** Some conversation row in the database is behind memory. */
    private boolean rowsLag() {
        return unsynced > 0 || convs.values().stream().anyMatch(c -> c.dirty);
    }

    /** Writes the lagging conversation rows in their own transaction (see {@link #CONV_SYNC_CHUNK}). */
    private void syncRows() throws IOException {
        ensureOpen();
        if (!rowsLag()) {
            return;
        }
        try {
            begin.execute();
            try {
                writeRows(Map.of());
                commitTx.execute();
                syncedInMemory();
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly();
                throw e;
            }
        } catch (SQLException e) {
            throw error(file, "cannot write the conversation rows", e);
        }
    }

    /**
     * At open: applies each conversation's events above its {@code synced_seq} (stored by batches that
     * did not write the rows) to the rows in memory, as those batches did: the last message, the unread
     * count, and the cursor moved over the stored seqs above it. Counts the events above each
     * {@code fts_seq} (not indexed yet) and raises the next insertion number above every event read.
     * One range of the table per conversation. The rows are written at the next sync.
     */
    private void replayUnsynced() throws SQLException {
        List<String> touched = new ArrayList<>();
        try (PreparedStatement ps = db.prepareStatement("SELECT c.conv, e.seq, e.kind, e.sender, e.at, e.n, e.seq > c.synced_seq,"
                + " e.seq > c.fts_seq FROM convs c JOIN events e ON e.id > ((c.no << " + SEQ_BITS + ") | min(c.synced_seq, c.fts_seq))"
                + " AND e.id <= ((c.no << " + SEQ_BITS + ") | " + MAX_SEQ + ")");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String conv = rs.getString(1);
                Conv c = convs.get(conv);
                nextN = Math.max(nextN, rs.getLong(6) + 1);
                if (rs.getBoolean(8)) {
                    unindexed++;
                }
                if (!rs.getBoolean(7)) {
                    continue;
                }
                unsynced++;
                if (!c.dirty) {
                    c.dirty = true;
                    touched.add(conv);
                }
                long seq = rs.getLong(2);
                if (seq > c.lastSeq) {
                    c.lastSeq = seq;
                    c.lastAt = rs.getLong(5);
                }
                if (seq > c.readHead && Event.MSG.equals(rs.getString(3)) && !rs.getString(4).equals(selfUser)) {
                    c.unread++;
                }
            }
        }
        for (String conv : touched) {
            Conv c = convs.get(conv);
            c.cursor = advance(c, c.cursor);
        }
    }

    /**
     * Inside a transaction: indexes every conversation's stored events above its {@code ftsSeq} for
     * search (the copies in {@code next}, added for the conversations the batch did not touch, get the
     * new marks; the caller writes the rows).
     */
    private void indexAbove(Map<String, Conv> next) throws SQLException {
        convs.forEach((conv, c) -> {
            if (c.lastSeq > c.ftsSeq && !next.containsKey(conv)) {
                next.put(conv, c.copy());
            }
        });
        for (Conv n : next.values()) {
            if (n.lastSeq > n.ftsSeq) {
                indexRange.setLong(1, n.key(n.ftsSeq));
                indexRange.setLong(2, n.key(MAX_SEQ));
                indexRange.executeUpdate();
                n.ftsSeq = n.lastSeq;
                n.dirty = true;
            }
        }
    }

    /** Brings the search index up to date (the events stored since the last chunk), in one transaction with the rows. */
    private void catchUpIndex() throws SQLException {
        if (unindexed == 0) {
            return;
        }
        begin.execute();
        try {
            Map<String, Conv> next = new HashMap<>();
            indexAbove(next);
            writeRows(next);
            commitTx.execute();
            convs.putAll(next);
            unindexed = 0;
            syncedInMemory();
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly();
            throw e;
        }
    }

    /**
     * Inside a batch's transaction: stores {@code e} unless it is stored (null), as a recall left it
     * when a recall of it (or, for an edit, of its message) is stored already: a push of the original
     * that arrives after its recall does not bring its body back. A recall empties its message and
     * the message's edits (and takes them out of the search index); so does a tombstone the server
     * sent. {@code withRecalls} changes in memory at once: a rolled-back batch only leaves it too wide.
     * An event at or below the conversation's {@code ftsSeq} is indexed at once. Returns the event as stored.
     */
    private ReceivedEvent insert(Conv c, ReceivedEvent e) throws SQLException {
        if (!e.recalled() && withRecalls.contains(e.conv())
                && (Event.MSG.equals(e.kind()) || Event.EDIT.equals(e.kind())) && isRecalled(e.conv(), Event.MSG.equals(e.kind()) ? e.seq() : e.ref())) {
            e = e.asRecalled();
        }
        long n = nextN;
        if (!insertRow(c, e)) {
            return null;
        }
        if (e.seq() <= c.ftsSeq && e.body() != null && !e.recalled()) {
            indexOne.setLong(1, n);
            indexOne.setString(2, e.body());
            indexOne.setLong(3, c.key(e.seq()));
            indexOne.executeUpdate();
        }
        if (Event.RECALL.equals(e.kind())) {
            withRecalls.add(e.conv());
            for (PreparedStatement ps : new PreparedStatement[] {unindexRecalled, emptyRecalled}) {
                ps.setLong(1, c.key(e.ref()));
                ps.setString(2, e.conv());
                ps.setLong(3, e.ref());
                if (ps == unindexRecalled) ps.setLong(4, c.ftsSeq);
                ps.executeUpdate();
            }
        }
        return e;
    }

    private boolean isRecalled(String conv, long seq) throws SQLException {
        recalledAt.setString(1, conv);
        recalledAt.setLong(2, seq);
        try (ResultSet rs = recalledAt.executeQuery()) {
            return rs.next();
        }
    }

    private boolean insertRow(Conv c, ReceivedEvent e) throws SQLException {
        insertEvent.setLong(1, c.key(e.seq()));
        insertEvent.setLong(2, nextN);
        insertEvent.setString(3, e.conv());
        insertEvent.setLong(4, e.seq());
        insertEvent.setString(5, e.kind());
        insertEvent.setString(6, e.mid());
        insertEvent.setString(7, e.sender());
        insertEvent.setString(8, e.cmid());
        insertEvent.setString(9, e.body());
        insertEvent.setLong(10, e.at());
        if (e.ref() > 0) {
            insertEvent.setLong(11, e.ref());
        } else {
            insertEvent.setNull(11, java.sql.Types.INTEGER);
        }
        insertEvent.setInt(12, e.recalled() ? 1 : 0);
        insertEvent.setInt(13, e.count());
        if (insertEvent.executeUpdate() != 1) {
            return false;
        }
        nextN++;
        return true;
    }

    private boolean insertConv(String conv, long no) throws SQLException {
        insertConv.setString(1, conv);
        insertConv.setLong(2, no);
        return insertConv.executeUpdate() == 1;
    }

    /**
     * The cursor moved from {@code from} over {@code inserted}, when nothing was stored above
     * {@code from} before them: then they are all the stored seqs above it, and no read is needed.
     */
    private static long advanceOver(long from, List<ReceivedEvent> inserted) {
        long[] seqs = new long[inserted.size()];
        for (int i = 0; i < seqs.length; i++) {
            seqs[i] = inserted.get(i).seq();
        }
        Arrays.sort(seqs);
        long cur = from;
        for (long seq : seqs) {
            if (seq == cur + 1) {
                cur++;
            } else if (seq > cur + 1) {
                break;
            }
        }
        return cur;
    }

    /** From {@code from}, moves over the stored seqs from+1, from+2, ... (reads only the rows above {@code from}). */
    private long advance(Conv c, long from) throws SQLException {
        long cur = from;
        seqsAbove.setLong(1, c.key(from));
        seqsAbove.setLong(2, c.key(MAX_SEQ));
        try (ResultSet rs = seqsAbove.executeQuery()) {
            while (rs.next() && rs.getLong(1) == cur + 1) {
                cur++;
            }
        }
        return cur;
    }

    // ------------------------------------------------------------------ queries for the app

    /**
     * Up to {@code limit} conversations, most recent last message first (ties by conversation id, descending),
     * starting after {@code after} (a row of the previous page; null for the first page). Keyset
     * paging: the conversation rows (one per conversation, nothing per event) are sorted, then only
     * the page's rows are joined to their last event. There is deliberately no index on recency: it
     * would change with every received message, two more pages written and fsynced per batch.
     */
    public synchronized List<ConversationSummary> conversations(ConversationSummary after, int limit) throws IOException {
        checkLimit(limit);
        syncRows();
        String sql = "SELECT c.conv, c.cursor, c.read_seq, c.read_unread + c.unread, " + EVENT_COLUMNS
                + " FROM (SELECT conv, no, cursor, read_seq, read_unread, unread, last_seq, last_at FROM convs"
                + (after == null ? "" : " WHERE (last_at, conv) < (?, ?)")
                + " ORDER BY last_at DESC, conv DESC LIMIT ?) c"
                // the last event, or the message it changed when it is an edit or a recall
                + " LEFT JOIN events l ON l.id = (c.no << " + SEQ_BITS + ") | c.last_seq AND c.last_seq > 0"
                + " LEFT JOIN events e ON e.id = (c.no << " + SEQ_BITS + ") | coalesce(l.ref, l.seq)"
                + " ORDER BY c.last_at DESC, c.conv DESC";
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            int i = 1;
            if (after != null) {
                ps.setLong(i++, after.last() == null ? 0 : after.last().at()); // the row as the app saw it
                ps.setString(i++, after.conv());
            }
            ps.setInt(i, limit);
            List<ConversationSummary> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ReceivedEvent last = rs.getString(5) == null ? null : event(rs, 5);
                    out.add(new ConversationSummary(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), last));
                }
            }
            return out;
        } catch (SQLException e) {
            throw error(file, "cannot read the conversation list", e);
        }
    }

    /** Up to {@code limit} stored events of {@code conv} with seq &lt; {@code beforeSeq}, the newest of them, in seq order. */
    public synchronized List<ReceivedEvent> eventsBefore(String conv, long beforeSeq, int limit) throws IOException {
        checkLimit(limit);
        List<ReceivedEvent> out = queryEvents("SELECT " + EVENT_COLUMNS + " FROM events e WHERE e.id > ? AND e.id <= ?" + LISTED
                + " ORDER BY e.id DESC LIMIT ?", conv, 0, Math.max(beforeSeq, 1) - 1, limit);
        Collections.reverse(out);
        return out;
    }

    /** Up to {@code limit} stored events of {@code conv} with seq &gt; {@code afterSeq}, the oldest of them, in seq order. */
    public synchronized List<ReceivedEvent> eventsAfter(String conv, long afterSeq, int limit) throws IOException {
        if (limit < 1) {
            throw new IllegalArgumentException("limit: must be at least 1, got " + limit);
        }
        return queryEvents("SELECT " + EVENT_COLUMNS + " FROM events e WHERE e.id > ? AND e.id <= ?" + LISTED
                + " ORDER BY e.id LIMIT ?", conv, afterSeq, MAX_SEQ, limit);
    }

    /**
     * The versions of the message at {@code seq} of {@code conv} held here, oldest first: the message
     * as sent, then each edit of it in seq order (empty bodies once recalled). Empty when the message
     * is not held. O(its edits): index {@code events_ref}.
     */
    public synchronized List<ReceivedEvent> editHistory(String conv, long seq) throws IOException {
        Objects.requireNonNull(conv, "conv");
        ensureOpen();
        Conv c = convs.get(conv);
        if (c == null || seq < 1 || seq > MAX_SEQ) {
            return List.of();
        }
        // The message by its key, its edits through events_ref: one lookup each.
        String sql = "SELECT " + EVENT_COLUMNS + " FROM events e WHERE e.id IN (SELECT id FROM events WHERE id = ? AND kind = 'msg'"
                + " UNION ALL SELECT id FROM events WHERE conv = ? AND ref = ? AND kind = 'edit') ORDER BY e.id LIMIT " + MAX_PAGE;
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            ps.setLong(1, c.key(seq));
            ps.setString(2, conv);
            ps.setLong(3, seq);
            return events(ps);
        } catch (SQLException e) {
            throw error(file, "cannot read events of " + conv, e);
        }
    }

    /**
     * Runs {@code sql} (its parameters: the key range's bounds, exclusive and inclusive, then the limit)
     * over {@code conv}'s events with seq in ({@code fromSeq}, {@code toSeq}]; none when the store has no
     * such conversation.
     */
    private List<ReceivedEvent> queryEvents(String sql, String conv, long fromSeq, long toSeq, int limit) throws IOException {
        Objects.requireNonNull(conv, "conv");
        ensureOpen();
        Conv c = convs.get(conv);
        if (c == null || toSeq <= fromSeq) {
            return List.of();
        }
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            ps.setLong(1, c.key(fromSeq));
            ps.setLong(2, c.key(toSeq));
            ps.setInt(3, limit);
            return events(ps);
        } catch (SQLException e) {
            throw error(file, "cannot read events of " + conv, e);
        }
    }

    /**
     * Stored messages whose body, or the body of one of their edits, contains every word of {@code text}
     * (the last word also as a prefix), each with its latest text, newest stored first, up to {@code limit}
     * hits (a message whose text and edit both match is listed once, so a page may hold fewer); only of {@code conv} when it is not null; after
     * {@code before} (a hit of the previous page) when it is not null. FTS5 index: the cost grows with
     * the number of matching events (with {@code conv} set, those of every conversation), not with the history.
     */
    public synchronized List<ReceivedEvent> search(String text, String conv, ReceivedEvent before, int limit) throws IOException {
        Objects.requireNonNull(text, "text");
        checkLimit(limit);
        String match = matchExpression(text);
        if (match.isEmpty()) {
            return List.of();
        }
        ensureOpen();
        Conv only = conv == null ? null : convs.get(conv);
        Conv beforeConv = before == null ? null : convs.get(before.conv());
        if (conv != null && only == null || before != null && beforeConv == null) {
            return List.of();   // nothing of that conversation is held
        }
        // The index's rowid is the insertion number (newest stored first), rid the hit's key. A hit in an
        // edit is its message (its latest text shown); recalled events are not in the index.
        String sql = "SELECT " + EVENT_COLUMNS + " FROM events_fts f JOIN events h ON h.id = f.rid"
                + " JOIN events e ON e.id = ((h.id >> " + SEQ_BITS + ") << " + SEQ_BITS + ") | coalesce(h.ref, h.seq)"
                + " WHERE events_fts MATCH ?"
                + (conv == null ? "" : " AND f.rid > ? AND f.rid <= ?")
                + (before == null ? "" : " AND f.rowid < (SELECT n FROM events WHERE id = ?)")
                + " ORDER BY f.rowid DESC LIMIT ?";
        try {
            catchUpIndex(); // what was stored since the last chunk is searchable too
        } catch (SQLException e) {
            throw error(file, "cannot update the search index", e);
        }
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            int i = 1;
            ps.setString(i++, match);
            if (only != null) {
                ps.setLong(i++, only.key(0));
                ps.setLong(i++, only.key(MAX_SEQ));
            }
            if (beforeConv != null) {
                ps.setLong(i++, beforeConv.key(before.seq()));
            }
            ps.setInt(i, limit);
            List<ReceivedEvent> hits = new ArrayList<>();
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (ReceivedEvent e : events(ps)) {
                if (seen.add(e.conv() + '\u0000' + e.seq())) {
                    hits.add(e);   // a message and its edit may both match: listed once
                }
            }
            return hits;
        } catch (SQLException e) {
            throw error(file, "cannot search", e);
        }
    }

    /** The FTS5 query for user text: every word quoted (no operators), the last one also a prefix. */
    static String matchExpression(String text) {
        List<String> words = new ArrayList<>();
        for (String w : text.trim().split("\\s+")) {
            if (!w.isEmpty()) {
                words.add("\"" + w.replace("\"", "\"\"") + "\"");
            }
        }
        if (words.isEmpty()) {
            return "";
        }
        words.set(words.size() - 1, words.get(words.size() - 1) + "*");
        return String.join(" ", words);
    }

    /**
     * Applies the read state {@code state} of {@code conv} from the server if it is the latest (the
     * highest {@code read}; for an equal {@code read}, the highest {@code head}; any one replaces a
     * state the server did not give), and recounts the messages of other users stored above its head:
     * O(those messages), none read when nothing is stored above it. Returns false when an applied state
     * is as late. Applied in memory at once and written with the conversation rows by the next batch's
     * transaction (or the next row write): no transaction of its own. A state lost to a kill before
     * that is given again by the server (every {@code subbed}); the store then shows the one before.
     */
    public synchronized boolean applyReadState(String conv, ReadState state) throws IOException {
        Objects.requireNonNull(conv, "conv");
        return !applyReadStates(Map.of(conv, Objects.requireNonNull(state, "state"))).isEmpty();
    }

    /** {@link #applyReadState} of each entry. Returns the conversations whose state was applied. */
    public synchronized java.util.Set<String> applyReadStates(Map<String, ReadState> states) throws IOException {
        ensureOpen();
        Map<String, ReadState> newer = new LinkedHashMap<>();
        states.forEach((conv, state) -> {
            Conv c = convs.get(conv);
            if (c == null || !c.readKnown
                    || state.read() > c.read || state.read() == c.read && state.head() > c.readHead) {
                newer.put(conv, state);
            }
        });
        if (newer.isEmpty()) {
            return java.util.Set.of();
        }
        // Memory only: the state is written with the conversation rows, by the next batch's transaction
        // or the next row write (CONV_SYNC_CHUNK, a sync page, the conversation list, close). A state
        // lost to a kill is the server's to give again (every subbed carries it); what the rows hold
        // stays consistent (they are written together with their marks, so open replays nothing twice).
        try {
            for (Map.Entry<String, ReadState> e : newer.entrySet()) {
                String conv = e.getKey();
                ReadState state = e.getValue();
                Conv c = convs.computeIfAbsent(conv, k -> newConv());
                c.unread = state.head() >= c.lastSeq ? 0 : countAbove(c, state.head());   // nothing stored above the head: no read
                c.readHead = state.head();
                c.read = state.read();
                c.readUnread = state.unread();
                c.readKnown = true;
                c.dirty = true;
                c.readDirty = true;
            }
        } catch (SQLException e) {
            throw error(file, "cannot count the messages above the read state of " + newer.keySet(), e);
        }
        readStatesWaiting = true;
        return newer.keySet();
    }

    /**
     * The read cursor and the unread count now of {@code conv} (0 and 0 when nothing is known of it),
     * from memory: the rows may lag the events ({@link #CONV_SYNC_CHUNK}), and the receive path asks
     * after every batch.
     */
    public synchronized ReadStatus readStatus(String conv) throws IOException {
        Objects.requireNonNull(conv, "conv");
        ensureOpen();
        Conv c = convs.get(conv);
        return c == null ? new ReadStatus(conv, 0, 0) : status(conv, c);
    }

    /** {@link #readStatus} of every conversation the store has a row for. */
    public synchronized Map<String, ReadStatus> readStatuses() throws IOException {
        ensureOpen();
        Map<String, ReadStatus> out = new TreeMap<>();
        convs.forEach((conv, c) -> out.put(conv, status(conv, c)));
        return out;
    }

    /** The sum of the unread counts now over every conversation. */
    public synchronized long unreadTotal() throws IOException {
        ensureOpen();
        return convs.values().stream().mapToLong(c -> c.readUnread + c.unread).sum();
    }

    private static ReadStatus status(String conv, Conv c) {
        return new ReadStatus(conv, c.read, c.readUnread + c.unread);
    }

    /** Runs {@code ps}, whose columns start with {@link #EVENT_COLUMNS}. */
    private static List<ReceivedEvent> events(PreparedStatement ps) throws SQLException {
        List<ReceivedEvent> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(event(rs, 1));
            }
        }
        return out;
    }

    private static ReceivedEvent event(ResultSet rs, int i) throws SQLException {
        return new ReceivedEvent(rs.getString(i), rs.getLong(i + 1), rs.getString(i + 2), rs.getString(i + 3),
                rs.getString(i + 4), rs.getString(i + 5), rs.getString(i + 6), rs.getLong(i + 7), rs.getInt(i + 11),
                rs.getLong(i + 8), rs.getInt(i + 9) != 0, rs.getString(i + 10));
    }

    static void checkLimit(int limit) {
        if (limit < 1 || limit > MAX_PAGE) {
            throw new IllegalArgumentException("limit: must be between 1 and " + MAX_PAGE + ", got " + limit);
        }
    }

    // ------------------------------------------------------------------ outbox

    /** Durably adds {@code entry} to the outbox (after the others); when this returns, a restarted process sees it. */
    synchronized void outboxAdd(PendingSend entry) throws IOException {
        ensureOpen();
        if (outboxGet(entry.cmid()) != null) {
            throw new IllegalArgumentException("cmid already in the outbox: " + entry.cmid());
        }
        try (PreparedStatement ps = db.prepareStatement(
                "INSERT INTO outbox (cmid, conv, body, created_at, internal_errors, kind, ref) VALUES (?, ?, ?, ?, ?, ?, ?)")) {
            ps.setString(1, entry.cmid());
            ps.setString(2, entry.conv());
            ps.setString(3, entry.body());
            ps.setLong(4, entry.createdAtMillis());
            ps.setInt(5, entry.internalErrors());
            ps.setString(6, entry.kind());
            ps.setLong(7, entry.ref());
            ps.executeUpdate();
        } catch (SQLException e) {
            throw error(file, "cannot add to the outbox", e);
        }
    }

    /** Durably removes the entry of {@code cmid}; false (nothing written) if there was none. */
    synchronized boolean outboxRemove(String cmid) throws IOException {
        ensureOpen();
        try (PreparedStatement ps = db.prepareStatement("DELETE FROM outbox WHERE cmid = ?")) {
            ps.setString(1, cmid);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            throw error(file, "cannot remove from the outbox", e);
        }
    }

    /** Durably counts one {@code INTERNAL} answer of the entry of {@code cmid}; the updated entry, or null if none. */
    synchronized PendingSend outboxRecordInternalError(String cmid) throws IOException {
        ensureOpen();
        try (PreparedStatement ps = db.prepareStatement(
                "UPDATE outbox SET internal_errors = internal_errors + 1 WHERE cmid = ?")) {
            ps.setString(1, cmid);
            if (ps.executeUpdate() == 0) {
                return null;
            }
        } catch (SQLException e) {
            throw error(file, "cannot update the outbox", e);
        }
        return outboxGet(cmid);
    }

    /** The entry of {@code cmid}, or null. */
    synchronized PendingSend outboxGet(String cmid) throws IOException {
        List<PendingSend> l = outboxQuery(" WHERE cmid = ?", cmid);
        return l.isEmpty() ? null : l.get(0);
    }

    /** The pending entries in insertion order. */
    synchronized List<PendingSend> outbox() throws IOException {
        return outboxQuery("", null);
    }

    private List<PendingSend> outboxQuery(String where, String cmid) throws IOException {
        ensureOpen();
        try (PreparedStatement ps = db.prepareStatement(
                "SELECT cmid, conv, body, created_at, internal_errors, kind, ref FROM outbox" + where + " ORDER BY id")) {
            if (cmid != null) {
                ps.setString(1, cmid);
            }
            List<PendingSend> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new PendingSend(rs.getString(1), rs.getString(2), rs.getString(3), rs.getLong(4), rs.getInt(5),
                            rs.getString(6), rs.getLong(7)));
                }
            }
            return out;
        } catch (SQLException e) {
            throw error(file, "cannot read the outbox", e);
        }
    }

    // ------------------------------------------------------------------ lifecycle and errors

    private void ensureOpen() throws LocalStoreException {
        if (closed) {
            throw new LocalStoreException(Problem.FAILED, file, "the store is closed", null);
        }
    }

    /** Closes the database; waits for a commit under way (commits hold the same monitor). Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            syncRows(); // so that the next open replays nothing
        } catch (IOException e) {
            org.slf4j.LoggerFactory.getLogger(LocalStore.class).warn("closing the client store: {}", e.toString());
        }
        closed = true;
        closeQuietly(db);
    }

    private void rollbackQuietly() {
        try {
            if (!db.getAutoCommit()) {
                db.rollback();
            } else {
                tx.execute("ROLLBACK");
            }
        } catch (SQLException e) {
            org.slf4j.LoggerFactory.getLogger(LocalStore.class).warn("rollback in {}: {}", file, e.toString());
        }
    }

    private static void closeQuietly(Connection db) {
        if (db == null) {
            return;
        }
        try {
            db.close();
        } catch (SQLException e) {
            org.slf4j.LoggerFactory.getLogger(LocalStore.class).warn("closing the client store: {}", e.toString());
        }
    }

    /** SQLITE_CORRUPT (11) and SQLITE_NOTADB (26), primary codes: the file is damaged. */
    static LocalStoreException error(Path file, String what, SQLException e) {
        int primary = e.getErrorCode() & 0xff;
        Problem p = primary == 11 || primary == 26 ? Problem.DAMAGED : Problem.FAILED;
        String detail = what + ": " + e.getMessage()
                + (p == Problem.DAMAGED ? " (the file is damaged; it is not repaired or recreated: move it away to start over)" : "");
        return new LocalStoreException(p, file, detail, e);
    }
}
