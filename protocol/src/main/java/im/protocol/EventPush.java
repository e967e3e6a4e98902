package im.protocol;

import java.util.Objects;

/** {@code event}: best-effort push of one committed event; wire shape {@code {"t":"event","ev":{...}}}. */
public record EventPush(Event ev) implements ServerFrame {
    public EventPush {
        Objects.requireNonNull(ev, "ev");
    }
}
