package im.store.cursor;

import im.topics.CursorRecord;
import java.util.List;

/**
 * Where {@link CursorService} puts the cursor records of a transaction. It is called inside the
 * transaction, after the rows are written and before COMMIT, and must return only once every record
 * is durable on the topic (or throw, which rolls the transaction back). So a committed cursor change
 * is always on the topic, and in commit order per (device, conversation): the row lock is held from
 * the write through the publish to the commit, and the next change of the row waits for it.
 */
public interface CursorSink extends AutoCloseable {
    /** A sink that publishes nothing: a cursor service without Kafka (a gateway without a broker, tests). */
    CursorSink NONE = records -> { };

    /**
     * Publishes {@code records} and returns once all are acknowledged.
     *
     * @throws im.infra.db.DatabaseUnavailableException (answered {@code UNAVAILABLE}) if they are not
     *         acknowledged in time; the caller's transaction then rolls back and the device retries
     */
    void publish(List<CursorRecord> records);

    @Override
    default void close() {}
}
