package im.topics;

/**
 * A topic record that does not follow its documented format (docs/topics.md): not JSON, an
 * unknown {@code v}, a required field missing or of the wrong type, or an unknown {@code kind}.
 * The message names the record type and the field. Consumers log the record's topic, partition
 * and offset with this message and skip the record ({@link #describe}); retrying cannot help.
 */
public final class MalformedRecordException extends IllegalArgumentException {
    public MalformedRecordException(String record, String problem) {
        super(record + ": " + problem);
    }

    /** The one log line for a skipped record: where it is, and what is wrong with it. */
    public static String describe(String topic, int partition, long offset, RuntimeException problem) {
        return "skipping malformed record at " + topic + "-" + partition + "@" + offset + ": " + problem.getMessage();
    }
}
