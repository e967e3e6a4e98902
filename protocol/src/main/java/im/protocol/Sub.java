package im.protocol;

import java.util.Objects;

/** {@code sub}: start pushes and hints for all conversations of the authenticated user. */
public record Sub(String rid) implements ClientFrame {
    public Sub {
        Objects.requireNonNull(rid, "rid");
    }
}
