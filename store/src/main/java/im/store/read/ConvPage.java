package im.store.read;

import java.util.List;

/** A page of {@code sub}: conversations in id order, and whether more follow the last. */
public record ConvPage(List<ConvCursor> convs, boolean more) {
    public ConvPage {
        convs = List.copyOf(convs);
    }
}
