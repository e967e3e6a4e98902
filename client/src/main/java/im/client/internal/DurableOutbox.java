package im.client.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.client.PendingSend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The client's durable outbox: messages written before their first send and removed only
 * when the server confirmed ({@code sent}) or terminally rejected them. Stored as
 * {@code <stateDir>/outbox.json}, replaced atomically on every change ({@link AtomicFile}),
 * so a restarted process sees exactly the entries whose add returned and whose remove did not.
 *
 * <p>Thread-safe. Changes are applied in memory under a short lock and then made durable by
 * group commit: the thread that gets the write lock writes the latest state, which covers
 * every change made before it, so concurrent callers whose change is already covered return
 * without another fsync.
 *
 * <p>One stateDir belongs to one open client at a time.
 */
final class DurableOutbox {
    static final String FILE_NAME = "outbox.json";
    private static final int FORMAT_VERSION = 1;

    private static final ObjectMapper MAPPER = JsonFields.MAPPER;

    private final Path file;

    private final Object stateLock = new Object();
    /** Insertion order is the send order. Guarded by stateLock. */
    private final LinkedHashMap<String, PendingSend> entries;
    /** Incremented on every in-memory change. Guarded by stateLock. */
    private long version;

    private final ReentrantLock writeLock = new ReentrantLock();
    /** The highest version known to be on disk. Guarded by writeLock. */
    private long durableVersion;

    private DurableOutbox(Path file, LinkedHashMap<String, PendingSend> entries) {
        this.file = file;
        this.entries = entries;
    }

    /**
     * Loads the outbox of {@code stateDir}, creating the directory if missing.
     *
     * @throws IOException naming the file if it exists but is not a complete, valid outbox
     */
    static DurableOutbox open(Path stateDir) throws IOException {
        Files.createDirectories(stateDir);
        Path file = stateDir.resolve(FILE_NAME);
        AtomicFile.deleteStaleTemps(file);
        LinkedHashMap<String, PendingSend> entries = Files.exists(file) ? read(file) : new LinkedHashMap<>();
        return new DurableOutbox(file, entries);
    }

    /** The state file. */
    Path file() {
        return file;
    }

    /** Durably adds {@code entry}; when this returns, a restarted process sees it. */
    void add(PendingSend entry) throws IOException {
        long v;
        synchronized (stateLock) {
            if (entries.containsKey(entry.cmid())) {
                throw new IllegalArgumentException("cmid already in the outbox: " + entry.cmid());
            }
            entries.put(entry.cmid(), entry);
            v = ++version;
        }
        // The caller is told the add failed, so it must not stay pending in memory.
        persistOrUndo(v, () -> entries.remove(entry.cmid(), entry));
    }

    /** Durably removes the entry of {@code cmid}; returns false (and writes nothing) if there was none. */
    boolean remove(String cmid) throws IOException {
        PendingSend removed;
        long v;
        synchronized (stateLock) {
            removed = entries.remove(cmid);
            if (removed == null) {
                return false;
            }
            v = ++version;
        }
        // Not removed on disk: keep it pending in memory too (a later resend gets dup=true).
        persistOrUndo(v, () -> {
            entries.putIfAbsent(cmid, removed);
            return true;
        });
        return true;
    }

    /**
     * Durably counts one {@code INTERNAL} answer for the entry of {@code cmid}; returns the updated
     * entry, or null (writing nothing) if there is none. The count survives a restart, so the cap
     * holds across process restarts too.
     */
    PendingSend recordInternalError(String cmid) throws IOException {
        PendingSend before;
        PendingSend after;
        long v;
        synchronized (stateLock) {
            before = entries.get(cmid);
            if (before == null) {
                return null;
            }
            after = new PendingSend(before.cmid(), before.conv(), before.body(), before.createdAtMillis(), before.internalErrors() + 1);
            entries.put(cmid, after);
            v = ++version;
        }
        persistOrUndo(v, () -> entries.replace(cmid, after, before));
        return after;
    }

    /** The entry of {@code cmid}, or null. */
    PendingSend get(String cmid) {
        synchronized (stateLock) {
            return entries.get(cmid);
        }
    }

    boolean contains(String cmid) {
        synchronized (stateLock) {
            return entries.containsKey(cmid);
        }
    }

    /** The pending entries in insertion order. */
    List<PendingSend> snapshot() {
        synchronized (stateLock) {
            return List.copyOf(entries.values());
        }
    }

    /**
     * Writes the in-memory change that made version {@code v}; if that fails, undoes it under
     * stateLock ({@code undo} says whether it changed anything, which counts as a new version) and
     * rethrows.
     */
    private void persistOrUndo(long v, BooleanSupplier undo) throws IOException {
        try {
            persist(v);
        } catch (IOException e) {
            synchronized (stateLock) {
                if (undo.getAsBoolean()) {
                    version++;
                }
            }
            throw e;
        }
    }

    private void persist(long v) throws IOException {
        writeLock.lock();
        try {
            if (durableVersion >= v) {
                return; // another thread's write already covered this change
            }
            List<PendingSend> state;
            long stateVersion;
            synchronized (stateLock) {
                state = new ArrayList<>(entries.values());
                stateVersion = version;
            }
            AtomicFile.write(file, encode(state));
            durableVersion = stateVersion;
        } finally {
            writeLock.unlock();
        }
    }

    private static byte[] encode(List<PendingSend> state) throws JsonProcessingException {
        ObjectNode root = MAPPER.createObjectNode().put("version", FORMAT_VERSION);
        ArrayNode arr = root.putArray("entries");
        for (PendingSend e : state) {
            arr.addObject().put("cmid", e.cmid()).put("conv", e.conv()).put("body", e.body())
                    .put("createdAtMillis", e.createdAtMillis()).put("internalErrors", e.internalErrors());
        }
        return MAPPER.writeValueAsBytes(root);
    }

    private static LinkedHashMap<String, PendingSend> read(Path file) throws IOException {
        JsonNode root = JsonFields.versionedRoot(Files.readAllBytes(file), FORMAT_VERSION, (d, c) -> corrupt(file, d, c));
        JsonNode arr = root.get("entries");
        if (arr == null || !arr.isArray()) {
            throw corrupt(file, "entries: expected an array", null);
        }
        LinkedHashMap<String, PendingSend> out = new LinkedHashMap<>();
        for (int i = 0; i < arr.size(); i++) {
            JsonNode n = arr.get(i);
            String where = "entries[" + i + "]";
            if (!n.isObject()) {
                throw corrupt(file, where + ": expected an object", null);
            }
            // internalErrors is optional: files written before it existed hold entries never answered INTERNAL.
            long internalErrors = n.has("internalErrors") ? number(file, n, where, "internalErrors") : 0;
            if (internalErrors < 0 || internalErrors > Integer.MAX_VALUE) {
                throw corrupt(file, where + ".internalErrors: expected a count", null);
            }
            PendingSend e = new PendingSend(text(file, n, where, "cmid"), text(file, n, where, "conv"),
                    text(file, n, where, "body"), number(file, n, where, "createdAtMillis"), (int) internalErrors);
            if (out.put(e.cmid(), e) != null) {
                throw corrupt(file, where + ": duplicate cmid " + e.cmid(), null);
            }
        }
        return out;
    }

    private static String text(Path file, JsonNode n, String where, String field) throws IOException {
        return JsonFields.text(n, where, field, true, (d, c) -> corrupt(file, d, c));
    }

    private static long number(Path file, JsonNode n, String where, String field) throws IOException {
        return JsonFields.number(n, where, field, (d, c) -> corrupt(file, d, c));
    }

    private static IOException corrupt(Path file, String detail, Throwable cause) {
        return new IOException("corrupt client state file " + file.toAbsolutePath() + ": " + detail
                + " (entries are not dropped silently; repair or move the file away)", cause);
    }

}
