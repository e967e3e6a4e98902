package im.streams;

import im.topics.MalformedRecordException;
import java.util.function.Function;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;

/**
 * The Streams roles' one policy for a malformed input record: log it with its topic, partition and
 * offset and skip it. Throwing would stop the stream thread, and the record would fail again
 * after every restart. The values are read as plain strings, so Kafka's deserialization handler
 * never sees them; the typed readers of {@code topics} decide instead.
 */
public final class MalformedRecords {
    private MalformedRecords() {}

    /** Logs the record being processed as skipped because of {@code problem}. */
    public static void skip(Logger log, ProcessorContext<?, ?> context, RuntimeException problem) {
        log.warn(context.recordMetadata()
                .map(m -> MalformedRecordException.describe(m.topic(), m.partition(), m.offset(), problem))
                .orElse("skipping malformed record: " + problem.getMessage()));
    }

    /** The value of {@code r} read by {@code reader}, or null when it is malformed (logged and skipped). */
    public static <T> T read(Logger log, ProcessorContext<?, ?> context, Record<String, String> r, Function<String, T> reader) {
        return read(log, context, r, reader, null);
    }

    /** As {@link #read}, and a record without a key is malformed too ({@code what} names the record in the log). */
    public static <T> T readKeyed(Logger log, ProcessorContext<?, ?> context, Record<String, String> r, Function<String, T> reader, String what) {
        return read(log, context, r, reader, what);
    }

    private static <T> T read(Logger log, ProcessorContext<?, ?> context, Record<String, String> r, Function<String, T> reader, String keyedAs) {
        try {
            T value = reader.apply(r.value());
            if (keyedAs != null && r.key() == null) throw new MalformedRecordException(keyedAs, "no key");
            return value;
        } catch (MalformedRecordException e) {
            skip(log, context, e);
            return null;
        }
    }
}
