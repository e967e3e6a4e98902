package im.protocol;

import java.util.Objects;

/**
 * {@code sync}: page through the events of {@code conv} visible to this user with
 * seq &gt; {@code after}, at most {@code limit} of them (1..{@link Limits#SYNC_MAX_LIMIT},
 * default {@link Limits#SYNC_DEFAULT_LIMIT} when absent on the wire).
 */
public record Sync(String rid, String conv, long after, int limit) implements ClientFrame {
    public Sync {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
    }

    /** A sync with the default page size. */
    public Sync(String rid, String conv, long after) {
        this(rid, conv, after, Limits.SYNC_DEFAULT_LIMIT);
    }
}
