package im.store.directory;

import java.util.List;

/**
 * One page of a listing ordered by id. {@code next} is the id to pass as {@code after} to get the
 * following page; null on the last page.
 */
public record Page<T>(List<T> items, String next) {
    public Page {
        items = List.copyOf(items);
    }
}
