package im.routing;

import im.topics.MalformedRecordException;
import org.apache.kafka.streams.processor.api.ProcessorContext;
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
}
