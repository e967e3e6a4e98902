package im.client.internal;

import im.client.ReceivedEvent;
import im.protocol.Event;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The device's durable event store, beside the outbox in {@code stateDir}:
 *
 * <ul>
 *   <li>{@code events.log}: append-only. A batch (one push batch or one sync page) is its new
 *       events, one JSON line each (each (conv, seq) once), then one commit record: the batch's
 *       length and CRC-32 and the cursors it moved.</li>
 *   <li>{@code events.state}: a checkpoint, replaced atomically ({@link AtomicFile}) only at open:
 *       the format version, a committed length of the log ({@code logBytes}) and every cursor at
 *       that point.</li>
 * </ul>
 *
 * <p>A batch commits with one write and one fsync of the log; only then does a method return, so
 * a caller that acks afterwards never acks anything a restarted process would not see. (Format 1
 * replaced the state file after every batch: three fsyncs, a file creation and a rename per batch,
 * which made the SDK the largest CPU consumer of the delivery bench; see docs/benchmarks.md.) At
 * open, past the checkpoint, a batch counts once its commit record follows it whole with matching
 * length and CRC; the first that does not is a write cut short by a crash (never acked or reported)
 * and is cut off with everything after it. A log <em>shorter</em> than the checkpoint, a damaged
 * record before it, a valid commit record after a damaged batch, or a damaged state file fails
 * {@link #open} with a message naming the file: committed state is never dropped silently, except
 * that damage to the last batch cannot be told from a torn write (as in a database's WAL); the
 * cursor then falls back to the previous commit and the client syncs the rest again.
 *
 * <p>The cursor of a conversation is contiguous: every visible event with seq &le; cursor is stored.
 * It advances over stored seqs cursor+1, cursor+2, ... and, for a sync page whose {@code after} is
 * &le; the cursor, to the end of the range the page covers ({@code head} when {@code more} is false,
 * else the last event's seq), which may include seqs this device cannot see.
 *
 * <p>Thread-safe (every method is synchronized; commits are serialized). All events are also held
 * in memory. One stateDir belongs to one open client at a time.
 */
public final class DurableEventStore {
    private static final Logger log = LoggerFactory.getLogger(DurableEventStore.class);
    public static final String LOG_FILE = "events.log";
    public static final String STATE_FILE = "events.state";

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

        static Result empty() {
            return new Result(List.of(), Map.of(), Map.of());
        }
    }

    private static final class Conv {
        long cursor;
        final TreeMap<Long, ReceivedEvent> events = new TreeMap<>();
    }

    private final Path logFile;
    private final Path stateFile;
    private final Map<String, Conv> convs;
    private long logBytes;
    /** The log, kept open between commits (opening it per batch was a third of the store's Java samples); null until the first commit. */
    private FileChannel appender;
    /**
     * A commit failed after it may have written: the log may hold bytes past {@code logBytes}, which
     * the next commit cuts off first (a truncate per commit would cost a metadata change each time).
     */
    private boolean tailDirty;

    private DurableEventStore(Path logFile, Path stateFile, Map<String, Conv> convs, long logBytes) {
        this.logFile = logFile;
        this.stateFile = stateFile;
        this.convs = convs;
        this.logBytes = logBytes;
    }

    /**
     * Loads the store of {@code stateDir} (creating the directory if missing).
     *
     * @throws IOException naming the file if the state or the committed part of the log is damaged or truncated
     */
    public static DurableEventStore open(Path stateDir) throws IOException {
        Files.createDirectories(stateDir);
        Path logFile = stateDir.resolve(LOG_FILE);
        Path stateFile = stateDir.resolve(STATE_FILE);
        AtomicFile.deleteStaleTemps(stateFile);
        Map<String, Conv> convs = new HashMap<>();
        long checkpoint = 0;
        boolean current = false;
        if (Files.exists(stateFile)) {
            EventStoreFiles.State st = EventStoreFiles.readState(stateFile);
            checkpoint = st.logBytes();
            current = EventStoreFiles.isCurrent(st);
            st.cursors().forEach((conv, cur) -> convs.computeIfAbsent(conv, k -> new Conv()).cursor = cur);
        }
        long committed = checkpoint;
        if (Files.exists(logFile)) {
            EventStoreFiles.Log read = EventStoreFiles.readLog(logFile, checkpoint);
            for (ReceivedEvent e : read.events()) {
                convs.computeIfAbsent(e.conv(), k -> new Conv()).events.put(e.seq(), e);
            }
            read.cursors().forEach((conv, cur) -> convs.computeIfAbsent(conv, k -> new Conv()).cursor = cur);
            committed = read.committed();
            long size = Files.size(logFile);
            if (size > committed) {
                log.info("cutting {} uncommitted bytes off {} (a batch whose commit did not finish; never acked)",
                        size - committed, logFile);
                try (FileChannel ch = FileChannel.open(logFile, StandardOpenOption.WRITE)) {
                    ch.truncate(committed);
                    ch.force(true);
                }
            }
        }
        if (!current || committed != checkpoint) {
            // The checkpoint: later opens read the log up to here without commit records, and an SDK that
            // only knows format 1 (where this file alone committed) refuses the directory instead of
            // cutting off the batches committed by commit records.
            Map<String, Long> cursors = new TreeMap<>();
            convs.forEach((k, v) -> cursors.put(k, v.cursor));
            AtomicFile.write(stateFile, EventStoreFiles.encodeState(committed, cursors));
        }
        return new DurableEventStore(logFile, stateFile, convs, committed);
    }

    Path logFile() {
        return logFile;
    }

    Path stateFile() {
        return stateFile;
    }

    synchronized long cursor(String conv) {
        Conv c = convs.get(conv);
        return c == null ? 0 : c.cursor;
    }

    synchronized Map<String, Long> cursors() {
        TreeMap<String, Long> out = new TreeMap<>();
        convs.forEach((k, v) -> out.put(k, v.cursor));
        return out;
    }

    synchronized List<ReceivedEvent> events(String conv) {
        Conv c = convs.get(conv);
        return c == null ? List.of() : List.copyOf(c.events.values());
    }

    synchronized boolean contains(String conv, long seq) {
        Conv c = convs.get(conv);
        return c != null && c.events.containsKey(seq);
    }

    /** New events of {@code pushes} (not stored yet and above the cursor) per conversation, in seq order. */
    synchronized Map<String, List<ReceivedEvent>> newEvents(List<Event> pushes) {
        Map<String, TreeMap<Long, ReceivedEvent>> fresh = new LinkedHashMap<>();
        for (Event e : pushes) {
            if (isNew(e)) {
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
     * As {@link #applyPushes}, for what {@link #newEvents} returned with no commit since (the
     * receive lane, the store's only writer, looks at the new events first for its fault hooks).
     */
    synchronized Result applyNew(Map<String, List<ReceivedEvent>> fresh) throws IOException {
        return commit(fresh, Map.of());
    }

    /**
     * Durably stores one sync page of {@code conv} (the reply to {@code sync{after}}) and, if
     * {@code after} is &le; the cursor, advances the cursor to the end of the range the page covers:
     * {@code head} when {@code more} is false, else the seq of the page's last event.
     */
    synchronized Result applyPage(String conv, long after, List<Event> events, boolean more, long head) throws IOException {
        Objects.requireNonNull(conv, "conv");
        TreeMap<Long, ReceivedEvent> fresh = new TreeMap<>();
        long last = after;
        for (Event e : events) {
            if (!conv.equals(e.conv())) {
                throw new IllegalArgumentException("sync page of " + conv + " holds an event of " + e.conv());
            }
            last = Math.max(last, e.seq());
            if (isNew(e)) {
                fresh.putIfAbsent(e.seq(), ReceivedEvent.of(e));
            }
        }
        long upTo = more ? last : Math.max(head, last);
        Map<String, List<ReceivedEvent>> added = fresh.isEmpty() ? Map.of() : Map.of(conv, List.copyOf(fresh.values()));
        return commit(added, Map.of(conv, new long[] {after, upTo}));
    }

    private boolean isNew(Event e) {
        Conv c = convs.get(e.conv());
        return c == null || (e.seq() > c.cursor && !c.events.containsKey(e.seq()));
    }

    /** {@code ranges}: conv → {after, upTo} of a sync page. */
    private Result commit(Map<String, List<ReceivedEvent>> added, Map<String, long[]> ranges) throws IOException {
        // 1. The new cursors, computed without touching memory (which changes only after the commit).
        Map<String, Long> before = new LinkedHashMap<>();
        Map<String, Long> after = new LinkedHashMap<>();
        List<String> touched = new ArrayList<>(added.keySet());
        for (String c : ranges.keySet()) {
            if (!touched.contains(c)) {
                touched.add(c);
            }
        }
        for (String conv : touched) {
            Conv c = convs.get(conv);
            long cur = c == null ? 0 : c.cursor;
            before.put(conv, cur);
            java.util.Set<Long> fresh = new java.util.HashSet<>();
            for (ReceivedEvent e : added.getOrDefault(conv, List.of())) {
                fresh.add(e.seq());
            }
            cur = advance(c, fresh, cur);
            long[] r = ranges.get(conv);
            if (r != null && r[0] <= cur && r[1] > cur) {
                cur = advance(c, fresh, r[1]);
            }
            after.put(conv, cur);
        }
        // The cursors this commit records: those that moved, and those of conversations new to the store.
        Map<String, Long> changed = new TreeMap<>();
        for (String conv : touched) {
            if (!after.get(conv).equals(before.get(conv)) || !convs.containsKey(conv)) {
                changed.put(conv, after.get(conv));
            }
        }
        if (added.isEmpty() && changed.isEmpty()) {
            return new Result(List.of(), before, after);
        }
        // 2. Append the events and their commit record, one write and one fsync: the commit point.
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        for (List<ReceivedEvent> list : added.values()) {
            for (ReceivedEvent e : list) {
                buf.write(EventStoreFiles.encode(e));
                buf.write('\n');
            }
        }
        byte[] events = buf.toByteArray();
        buf.write(EventStoreFiles.encodeCommit(events, changed));
        buf.write('\n');
        byte[] bytes = buf.toByteArray();
        {
            FileChannel ch = logChannel();
            if (tailDirty) {
                ch.truncate(logBytes); // drop the tail of the earlier commit that failed
            }
            tailDirty = true; // until this commit's fsync returned
            ByteBuffer bb = ByteBuffer.wrap(bytes);
            long pos = logBytes;
            while (bb.hasRemaining()) {
                pos += ch.write(bb, pos);
            }
            // fdatasync: the data and the file length (the metadata needed to read it back), not the times.
            ch.force(false);
            tailDirty = false;
        }
        if (logBytes == 0) {
            AtomicFile.fsyncDirectory(logFile.toAbsolutePath().getParent()); // the log file's creation
        }
        long newLogBytes = logBytes + bytes.length;
        // 3. Committed: now memory.
        logBytes = newLogBytes;
        List<ReceivedEvent> addedFlat = new ArrayList<>();
        for (String conv : touched) {
            Conv c = convs.computeIfAbsent(conv, k -> new Conv());
            for (ReceivedEvent e : added.getOrDefault(conv, List.of())) {
                c.events.put(e.seq(), e);
                addedFlat.add(e);
            }
            c.cursor = after.get(conv);
        }
        return new Result(List.copyOf(addedFlat), before, after);
    }

    /** The open log; reopened if closed (an interrupt during a write closes a channel). */
    private FileChannel logChannel() throws IOException {
        if (appender == null || !appender.isOpen()) {
            appender = FileChannel.open(logFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        }
        return appender;
    }

    /**
     * Closes the log file; waits for a commit under way (commits hold the same monitor). A later
     * commit would reopen the file. Called by the client before it releases the state directory.
     */
    public synchronized void close() {
        if (appender != null) {
            try {
                appender.close();
            } catch (IOException e) {
                log.debug("closing {}: {}", logFile, e.toString());
            }
            appender = null;
        }
    }

    /** From {@code from}, moves over seqs stored (or about to be) one by one. */
    private static long advance(Conv c, java.util.Set<Long> fresh, long from) {
        long cur = from;
        while (fresh.contains(cur + 1) || (c != null && c.events.containsKey(cur + 1))) {
            cur++;
        }
        return cur;
    }
}
