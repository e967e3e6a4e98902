package im.protocol;

/**
 * Size and range limits of the wire protocol, shared by server and client. All byte
 * limits count UTF-8 bytes.
 */
public final class Limits {
    /** UTF-8 bytes of one whole text frame (client to server). */
    public static final int MAX_FRAME_BYTES = 65536;
    /** UTF-8 bytes of a message {@code body}. */
    public static final int MAX_BODY_BYTES = 16384;
    /** Characters of an id (conv, cmid, rid, user, device); pattern {@code [A-Za-z0-9._:-]{1,64}}. */
    public static final int MAX_ID_CHARS = 64;
    /** Characters of a device token (printable ASCII, no spaces). */
    public static final int MAX_TOKEN_CHARS = 512;
    /** Largest seq: 2^53-1, exactly representable as a JavaScript number. */
    public static final long MAX_SEQ = 9007199254740991L;
    /** Page size of {@code sync} when {@code limit} is absent. */
    public static final int SYNC_DEFAULT_LIMIT = 100;
    /** Largest {@code sync} page size. */
    public static final int SYNC_MAX_LIMIT = 500;
    /** Conversations per {@code subbed} page when {@code limit} is absent (a {@code sub} without it is paged too). */
    public static final int SUB_DEFAULT_LIMIT = 500;
    /**
     * How long a client shows "typing" after a {@code typing} push (unless another one or a message of
     * that user arrives first). A client that keeps typing sends {@code typing} again well within it:
     * the server takes at most one per connection and conversation per {@code IM_TYPING_INTERVAL_MS}
     * (default 2 s) and drops the rest.
     */
    public static final long TYPING_SHOW_MILLIS = 6_000;
    /** Most seqs one {@code receipts} request asks about. */
    public static final int RECEIPTS_MAX_SEQS = 100;
    /** Largest {@code sub} page. */
    public static final int SUB_MAX_LIMIT = 1000;
    /** Events per {@code caughtup} page when {@code limit} is absent. */
    public static final int CATCHUP_DEFAULT_LIMIT = 500;
    /** Largest {@code catchup} page (pages are also cut by bytes, as {@code synced} pages are). */
    public static final int CATCHUP_MAX_LIMIT = 1000;
    /** Deepest object/array nesting accepted in a client frame (the root object is depth 1). */
    public static final int MAX_JSON_DEPTH = 8;

    /** The id pattern, for messages and docs. */
    public static final String ID_PATTERN = "[A-Za-z0-9._:-]{1,64}";

    private Limits() {
    }

    /** True if {@code s} matches {@link #ID_PATTERN}. */
    public static boolean isValidId(String s) {
        if (s == null || s.isEmpty() || s.length() > MAX_ID_CHARS) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == ':' || c == '-';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** True if {@code s} is 1..{@link #MAX_TOKEN_CHARS} printable ASCII characters without spaces. */
    public static boolean isValidToken(String s) {
        if (s == null || s.isEmpty() || s.length() > MAX_TOKEN_CHARS) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                return false;
            }
        }
        return true;
    }

    /** True if {@code s} contains no lone (unpaired) surrogate, i.e. it can be encoded as UTF-8. */
    public static boolean isWellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return false;
                }
            } else if (Character.isLowSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    /**
     * True if PostgreSQL can store {@code s} in a {@code text} column: well-formed Unicode
     * ({@link #isWellFormed}) without U+0000, which PostgreSQL text cannot hold. Every free-text
     * field that reaches the database is checked with this at the edge, so such input is refused
     * with a terminal code instead of failing the INSERT (which would look like a server bug).
     */
    public static boolean isStorableText(String s) {
        return s.indexOf('\0') < 0 && isWellFormed(s);
    }

    /**
     * UTF-8 byte length of {@code s} without allocating. A lone surrogate counts as 3
     * bytes (its CESU-8 size), so malformed text is never under-counted.
     */
    public static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }
}
