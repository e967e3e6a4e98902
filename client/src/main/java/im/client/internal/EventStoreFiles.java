package im.client.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.client.ReceivedEvent;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The file formats of the {@link DurableEventStore}: one JSON event per line in {@code events.log},
 * and the versioned {@code events.state} (committed log length, cursors). Strict: anything damaged
 * is an error naming the file, never skipped.
 */
final class EventStoreFiles {
    private static final int FORMAT_VERSION = 1;
    private static final ObjectMapper MAPPER = JsonFields.MAPPER;

    /** The content of {@code events.state}. */
    record State(long logBytes, Map<String, Long> cursors) {
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

    static byte[] encodeState(long logBytes, Map<String, Long> cursors) throws JsonProcessingException {
        ObjectNode root = MAPPER.createObjectNode().put("version", FORMAT_VERSION).put("logBytes", logBytes);
        ObjectNode cs = root.putObject("cursors");
        cursors.forEach(cs::put);
        return MAPPER.writeValueAsBytes(root);
    }

    static State readState(Path file) throws IOException {
        Map<String, Long> cursors = new TreeMap<>();
        JsonNode root = JsonFields.versionedRoot(Files.readAllBytes(file), FORMAT_VERSION, (d, c) -> corrupt(file, d, c));
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
        return new State(lb.longValue(), cursors);
    }

    /** The committed records of the log, in file order; a (conv, seq) stored twice must be the same event. */
    static List<ReceivedEvent> readLog(Path file, long committed) throws IOException {
        Map<String, ReceivedEvent> seen = new HashMap<>();
        List<ReceivedEvent> out = new ArrayList<>();
        byte[] bytes;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            if (committed > Integer.MAX_VALUE - 8) {
                throw corrupt(file, "committed part of " + committed + " bytes is too large to load", null);
            }
            ByteBuffer bb = ByteBuffer.allocate((int) committed);
            while (bb.hasRemaining()) {
                if (ch.read(bb) < 0) {
                    throw corrupt(file, "truncated while reading", null);
                }
            }
            bytes = bb.array();
        }
        if (bytes.length > 0 && bytes[bytes.length - 1] != '\n') {
            throw corrupt(file, "the committed part does not end with a complete record", null);
        }
        int start = 0;
        int line = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] != '\n') {
                continue;
            }
            line++;
            String where = "line " + line;
            String text = new String(bytes, start, i - start, StandardCharsets.UTF_8);
            start = i + 1;
            JsonNode n;
            try {
                n = MAPPER.readTree(text);
            } catch (JsonProcessingException e) {
                throw corrupt(file, where + ": not valid JSON: " + e.getOriginalMessage(), e);
            }
            if (n == null || !n.isObject()) {
                throw corrupt(file, where + ": expected a JSON object", null);
            }
            ReceivedEvent e;
            try {
                e = new ReceivedEvent(text(file, n, where, "conv", true), number(file, n, where, "seq"),
                        text(file, n, where, "kind", true), text(file, n, where, "mid", true),
                        text(file, n, where, "sender", true), text(file, n, where, "cmid", false),
                        text(file, n, where, "body", false), number(file, n, where, "at"));
            } catch (IllegalArgumentException ex) {
                throw corrupt(file, where + ": " + ex.getMessage(), ex);
            }
            ReceivedEvent old = seen.putIfAbsent(e.conv() + "\u0000" + e.seq(), e);
            if (old != null && !old.equals(e)) {
                throw corrupt(file, where + ": two different events for " + e.conv() + " seq " + e.seq(), null);
            }
            if (old == null) {
                out.add(e);
            }
        }
        return out;
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
