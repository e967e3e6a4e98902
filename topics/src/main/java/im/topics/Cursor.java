package im.topics;

/**
 * A device's cursor in a conversation, and the one rule by which two of them merge: a higher
 * install epoch starts over (a reinstall: the new install holds nothing of what the old one
 * stored), the same epoch keeps the larger {@code delivered} (duplicates, replays, acks out of
 * order), a lower epoch is stale and changes nothing. The sweeper folds {@code <prefix>cursors}
 * records with it; the cursor service's {@code device_cursors} upsert applies it in SQL, and
 * {@code CursorMergeIT} (module {@code store}) checks the two agree case by case.
 */
public record Cursor(long epoch, long delivered) {
    /** This cursor merged with another one's epoch and delivered seq. */
    public Cursor merge(long otherEpoch, long otherDelivered) {
        if (otherEpoch > epoch) return new Cursor(otherEpoch, otherDelivered);
        if (otherEpoch == epoch && otherDelivered > delivered) return new Cursor(epoch, otherDelivered);
        return this;
    }
}
