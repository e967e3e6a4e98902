package im.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import im.client.api.PendingSend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state files of the SDK before the SQLite store, met once in a state directory being upgraded:
 * {@code outbox.json} (unsent messages: only this device has them) is imported into the store's
 * outbox and then renamed {@code outbox.json.imported}; {@code events.log} / {@code events.state}
 * (received events, which the server still holds) are not read: they are renamed {@code *.replaced}
 * and the new store syncs every conversation again from 0 (acks merge with GREATEST on the server,
 * so nothing acked goes back). A damaged {@code outbox.json} fails the open naming the file, as before.
 */
final class LegacyState {
    private static final Logger log = LoggerFactory.getLogger(LegacyState.class);
    static final String OUTBOX = "outbox.json";
    private static final String[] EVENT_FILES = {"events.log", "events.state"};

    private LegacyState() {
    }

    static void importInto(Path stateDir, LocalStore store) throws IOException {
        Path outbox = stateDir.resolve(OUTBOX);
        if (Files.exists(outbox)) {
            LinkedHashMap<String, PendingSend> entries = read(outbox);
            for (PendingSend e : entries.values()) {
                if (store.outboxGet(e.cmid()) == null) {
                    store.outboxAdd(e); // durable before the file is renamed: a crash in between imports again, no duplicates
                }
            }
            Files.move(outbox, stateDir.resolve(OUTBOX + ".imported"), StandardCopyOption.REPLACE_EXISTING);
            log.info("imported {} pending message(s) from {} into {}", entries.size(), outbox, store.file());
        }
        for (String name : EVENT_FILES) {
            Path f = stateDir.resolve(name);
            if (Files.exists(f)) {
                Files.move(f, stateDir.resolve(name + ".replaced"), StandardCopyOption.REPLACE_EXISTING);
                log.warn("{} is from the SDK before the SQLite store; renamed to {}.replaced (the events are synced again from the server)",
                        f, name);
            }
        }
    }

    private static LinkedHashMap<String, PendingSend> read(Path file) throws IOException {
        JsonNode root = JsonFields.versionedRoot(Files.readAllBytes(file), 1, (d, c) -> corrupt(file, d, c));
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
