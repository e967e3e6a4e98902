package im.protocol;

import java.util.List;
import java.util.Objects;

/** {@code subbed}: pushes and hints are on; lists the user's conversations with head and cursor. */
public record Subbed(String rid, List<ConvState> convs) implements ServerFrame {
    public Subbed {
        Objects.requireNonNull(rid, "rid");
        convs = List.copyOf(convs);
    }
}
