package im.protocol;

import java.util.Objects;

/** One conversation in a {@link Subbed} reply: its head seq and this device's delivered cursor. */
public record ConvState(String conv, long head, long delivered) {
    public ConvState {
        Objects.requireNonNull(conv, "conv");
    }
}
