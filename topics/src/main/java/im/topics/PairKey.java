package im.topics;

/**
 * The one key of a (conversation, X) pair, X being a device (interest, cursors, lagging pairs, the
 * cursor service's batch merge and ack throttle) or a user (visibility periods):
 * {@code conv + "\u0000" + X}. The conversation comes first so that everything of one conversation
 * is one prefix range ({@code prefixScan(prefix(conv))}), and each change rewrites only its own
 * entry, never a value that grows with the conversation's size. The Streams roles persist these
 * keys (RocksDB stores and their changelog topics): the encoding must not change.
 */
public final class PairKey {
    /** Separates the two parts; ids never contain it (the protocol's id rule). */
    public static final char SEP = '\u0000';

    private PairKey() {}

    public static String of(String conv, String second) {
        return conv + SEP + second;
    }

    /** The prefix of every key of a conversation, for {@code prefixScan}. */
    public static String prefix(String conv) {
        return conv + SEP;
    }

    public static String conv(String key) {
        return key.substring(0, key.indexOf(SEP));
    }

    /** The second part: the device or user. */
    public static String second(String key) {
        return key.substring(key.indexOf(SEP) + 1);
    }
}
