package im.protocol;

import java.util.Objects;

/**
 * {@code sub}: start pushes and hints for the conversations of the authenticated user, one page at
 * a time: at most {@code limit} (1..{@link Limits#SUB_MAX_LIMIT}, default
 * {@link Limits#SUB_DEFAULT_LIMIT}) conversations whose id comes after {@code after} in the
 * server's order of conversation ids ({@code null}: from the first).
 */
public record Sub(String rid, String after, int limit) implements ClientFrame {
    public Sub {
        Objects.requireNonNull(rid, "rid");
    }

    /** The first page, of the default size. */
    public Sub(String rid) {
        this(rid, null, Limits.SUB_DEFAULT_LIMIT);
    }
}
