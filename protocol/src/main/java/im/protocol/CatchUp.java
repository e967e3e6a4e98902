package im.protocol;

import java.util.Objects;

/**
 * {@code catchup}: one page of the events this device has not acknowledged, across all the
 * conversations of its user, in (conversation, seq) order, after {@code after} ({@code null}: from
 * the start) and at most {@code limit} of them (1..{@link Limits#CATCHUP_MAX_LIMIT}, default
 * {@link Limits#CATCHUP_DEFAULT_LIMIT}). Replaces one {@code sync} per conversation after a reconnect.
 */
public record CatchUp(String rid, CatchUpPosition after, int limit) implements ClientFrame {
    public CatchUp {
        Objects.requireNonNull(rid, "rid");
    }

    /** The first page, of the default size. */
    public CatchUp(String rid) {
        this(rid, null, Limits.CATCHUP_DEFAULT_LIMIT);
    }
}
