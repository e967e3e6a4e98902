package im.protocol;

import java.util.Objects;

/** A conversation's head as its reader may know it (a former member's is its leave), in a {@link CaughtUp} page. */
public record ConvHead(String conv, long head) {
    public ConvHead {
        Objects.requireNonNull(conv, "conv");
    }
}
