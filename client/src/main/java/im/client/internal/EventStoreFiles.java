package im.client.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.client.ReceivedEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32;

/**
 * The file formats of the {@link DurableEventStore}: one JSON event per line in {@code events.log},
 * and the versioned {@code events.state} (committed log length, cursors). Strict: anything damaged
 * is an error naming the file, never skipped.
 */
final class EventStoreFiles {
    /** 2: the log carries commit records; the state file is a checkpoint written at open. 1: the state file is the commit. */
    private static final int FORMAT_VERSION = 2;
    private static final ObjectMapper MAPPER = JsonFields.MAPPER;

    /** The content of {@code events.state}. */
    record State(int version, long logBytes, Map<String, Long> cursors) {
    }

    private EventStoreFiles() {
    }

    /** One log record, without the newline. */
    static byte[] encode(ReceivedEvent e) throws JsonProcessingException {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("conv", e.conv()).put("seq", e.seq()).put("kind", e.kind()).put("mid", e.mid()).put("sender", e.sender());
        if (e.cmid() != null) {
            n.put("cmid", e.cmid());
        }
        if (e.body() != null) {
            n.put("body", e.body());
        }
        n.put("at", e.at());
        return MAPPER.writeValueAsBytes(n);
    }

    static boolean isCurrent(State st) {
        return st.version() == FORMAT_VERSION;
    }

    static byte[] encodeState(long logBytes, Map<String, Long> cursors) throws JsonProcessingException {
        ObjectNode root = MAPPER.createObjectNode().put("version", FORMAT_VERSION).put("logBytes", logBytes);
        ObjectNode cs = root.putObject("cursors");
        cursors.forEach(cs::put);
        return MAPPER.writeValueAsBytes(root);
    }

    static State readState(Path file) throws IOException {
        Map<String, Long> cursors = new TreeMap<>();
        JsonNode root = JsonFields.versionedRoot(Files.readAllBytes(file), new int[] {1, FORMAT_VERSION},
                (d, c) -> corrupt(file, d, c));
        JsonNode lb = root.get("logBytes");
        if (lb == null || !lb.isIntegralNumber() || !lb.canConvertToLong() || lb.longValue() < 0) {
            throw corrupt(file, "logBytes: expected a non-negative integer", null);
        }
        JsonNode cs = root.get("cursors");
        if (cs == null || !cs.isObject()) {
            throw corrupt(file, "cursors: expected an object", null);
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = cs.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            JsonNode v = f.getValue();
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
                throw corrupt(file, "cursors." + f.getKey() + ": expected a non-negative integer", null);
            }
            cursors.put(f.getKey(), v.longValue());
        }
        return new State(root.get("version").intValue(), lb.longValue(), cursors);
    }

    /** What {@link #readLog} found: the committed events, the cursors of commit records past the checkpoint, the committed length. */
    record Log(List<ReceivedEvent> events, Map<String, Long> cursors, long committed) {
    }

    /**
     * One commit record, without the newline: it follows the {@code batchBytes} bytes of its batch's
     * event lines (zero for a cursor-only commit) and carries their CRC-32 and the batch's cursors.
     */
    static byte[] encodeCommit(byte[] batch, Map<String, Long> cursors) throws JsonProcessingException {
        CRC32 crc = new CRC32();
        crc.update(batch);
        ObjectNode n = MAPPER.createObjectNode().put("commit", batch.length).put("crc", crc.getValue());
        ObjectNode cs = n.putObject("cursors");
        cursors.forEach(cs::put);
        return MAPPER.writeValueAsBytes(n);
    }

    /**
     * Reads the log. Up to {@code checkpoint} (the state file's {@code logBytes}) every line is
     * committed and must be valid. Past it, a batch counts only once its commit record follows it
     * whole with a matching length and CRC; the first batch that does not (a write cut short by a
     * crash: never acked) ends the committed part, and the caller cuts it off. A valid commit
     * record after such a batch means damage inside the committed part: an error, never skipped.
     * A (conv, seq) stored twice must be the same event.
     */
    static Log readLog(Path file, long checkpoint) throws IOException {
        byte[] bytes = readAll(file, checkpoint);
        if (checkpoint > 0 && bytes[(int) checkpoint - 1] != '\n') {
            throw corrupt(file, "the committed part does not end with a complete record", null);
        }
        Map<String, ReceivedEvent> seen = new HashMap<>();
        List<ReceivedEvent> out = new ArrayList<>();
        List<ReceivedEvent> pending = new ArrayList<>();
        Map<String, Long> cursors = new TreeMap<>();
        long committed = checkpoint;
        int start = 0;
        int line = 0;
        String torn = null;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] != '\n') {
                continue;
            }
            line++;
            String where = "line " + line;
            int lineStart = start;
            start = i + 1;
            if (torn != null) {
                if (isCommitRecord(bytes, lineStart, i)) {
                    throw corrupt(file, torn + ", but a commit record follows at " + where, null);
                }
                continue;
            }
            boolean beforeCheckpoint = start <= checkpoint;
            JsonNode n;
            try {
                n = parse(file, bytes, lineStart, i, where);
            } catch (IOException e) {
                if (beforeCheckpoint) {
                    throw e;
                }
                torn = e.getMessage();
                continue;
            }
            if (n.has("commit")) {
                if (beforeCheckpoint) {
                    continue; // the state file's cursors already cover it
                }
                byte[] batch = Arrays.copyOfRange(bytes, (int) committed, lineStart);
                Map<String, Long> cs = commitCursors(n);
                if (cs == null || !Arrays.equals(encodeCommit(batch, cs), Arrays.copyOfRange(bytes, lineStart, i))) {
                    torn = where + ": commit record does not match its batch";
                    continue;
                }
                for (ReceivedEvent e : pending) {
                    addOnce(file, where, seen, out, e);
                }
                pending.clear();
                cursors.putAll(cs);
                committed = start;
                continue;
            }
            ReceivedEvent e;
            try {
                e = event(file, n, where);
            } catch (IOException ex) {
                if (beforeCheckpoint) {
                    throw ex;
                }
                torn = ex.getMessage();
                continue;
            }
            if (beforeCheckpoint) {
                addOnce(file, where, seen, out, e);
            } else {
                pending.add(e);
            }
        }
        return new Log(out, cursors, committed);
    }

    private static byte[] readAll(Path file, long checkpoint) throws IOException {
        long size = Files.size(file);
        if (size > Integer.MAX_VALUE - 8) {
            throw corrupt(file, size + " bytes is too large to load", null);
        }
        if (size < checkpoint) {
            throw corrupt(file, "truncated: " + size + " bytes, but " + DurableEventStore.STATE_FILE + " says "
                    + checkpoint + " bytes are committed", null);
        }
        return Files.readAllBytes(file);
    }

    private static JsonNode parse(Path file, byte[] bytes, int from, int to, String where) throws IOException {
        JsonNode n;
        try {
            n = MAPPER.readTree(new String(bytes, from, to - from, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw corrupt(file, where + ": not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (n == null || !n.isObject()) {
            throw corrupt(file, where + ": expected a JSON object", null);
        }
        return n;
    }

    private static boolean isCommitRecord(byte[] bytes, int from, int to) {
        try {
            JsonNode n = MAPPER.readTree(new String(bytes, from, to - from, StandardCharsets.UTF_8));
            return n != null && n.isObject() && n.has("commit") && commitCursors(n) != null;
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    /** The cursors of a commit record, or null if it is not well formed. */
    private static Map<String, Long> commitCursors(JsonNode n) {
        JsonNode cs = n.get("cursors");
        if (n.size() != 3 || !n.get("commit").canConvertToLong() || n.get("crc") == null || cs == null || !cs.isObject()) {
            return null;
        }
        Map<String, Long> out = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = cs.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            if (!f.getValue().isIntegralNumber() || !f.getValue().canConvertToLong() || f.getValue().longValue() < 0) {
                return null;
            }
            out.put(f.getKey(), f.getValue().longValue());
        }
        return out;
    }

    private static ReceivedEvent event(Path file, JsonNode n, String where) throws IOException {
        try {
            return new ReceivedEvent(text(file, n, where, "conv", true), number(file, n, where, "seq"),
                    text(file, n, where, "kind", true), text(file, n, where, "mid", true),
                    text(file, n, where, "sender", true), text(file, n, where, "cmid", false),
                    text(file, n, where, "body", false), number(file, n, where, "at"));
        } catch (IllegalArgumentException ex) {
            throw corrupt(file, where + ": " + ex.getMessage(), ex);
        }
    }

    private static void addOnce(Path file, String where, Map<String, ReceivedEvent> seen, List<ReceivedEvent> out,
                                ReceivedEvent e) throws IOException {
        ReceivedEvent old = seen.putIfAbsent(e.conv() + "\u0000" + e.seq(), e);
        if (old != null && !old.equals(e)) {
            throw corrupt(file, where + ": two different events for " + e.conv() + " seq " + e.seq(), null);
        }
        if (old == null) {
            out.add(e);
        }
    }

    private static String text(Path file, JsonNode n, String where, String field, boolean required) throws IOException {
        return JsonFields.text(n, where, field, required, (d, c) -> corrupt(file, d, c));
    }

    private static long number(Path file, JsonNode n, String where, String field) throws IOException {
        return JsonFields.number(n, where, field, (d, c) -> corrupt(file, d, c));
    }

    static IOException corrupt(Path file, String detail, Throwable cause) {
        return new IOException("corrupt client event store " + file.toAbsolutePath() + ": " + detail
                + " (events are not dropped silently; repair or move the files "
                + DurableEventStore.LOG_FILE + " and " + DurableEventStore.STATE_FILE + " away)", cause);
    }
}
