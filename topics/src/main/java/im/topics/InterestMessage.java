package im.topics;

/**
 * A record of {@code <prefix>interest} ({@code v:2}, internal, docs/topics.md): a device's
 * registration for one conversation ({@link InterestRecord}), or a gateway's digest of all it
 * holds in one partition of the topic ({@link InterestDigest}).
 */
public sealed interface InterestMessage permits InterestRecord, InterestDigest {
    /** Schema version written as {@code "v"}. */
    int VERSION = 2;

    String toJson();

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    static InterestMessage read(String json) {
        Fields f = Fields.parse("interest record", json).version(VERSION);
        return f.has("digest") ? InterestDigest.read(Fields.of("interest digest", f.object("digest"))) : InterestRecord.read(f);
    }
}
