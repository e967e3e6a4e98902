package im.protocol;

import java.util.List;
import java.util.Objects;

/**
 * {@code subbed}: pushes and hints are on for the listed conversations, with head and cursor;
 * {@code more} is true when further conversations follow the last one listed (ask for them with a
 * {@link Sub} whose {@code after} is that conversation).
 */
public record Subbed(String rid, List<ConvState> convs, boolean more) implements ServerFrame {
    public Subbed {
        Objects.requireNonNull(rid, "rid");
        convs = List.copyOf(convs);
    }

    /** A last page. */
    public Subbed(String rid, List<ConvState> convs) {
        this(rid, convs, false);
    }
}
