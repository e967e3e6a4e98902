package im.topics;

import java.util.Set;

/**
 * A record of {@code <prefix>notices} ({@code v:1}, internal; docs/topics.md), read by every
 * gateway: a membership change ({@link MembershipNotice}, {@code kind} {@code join} or
 * {@code leave}, written by the delivery nodes) or a read cursor that moved ({@link ReadNotice},
 * {@code kind} {@code read}, written by the gateway that took the read).
 */
public sealed interface Notice permits MembershipNotice, ReadNotice {
    /** Schema version written as {@code "v"}. */
    int VERSION = 1;

    String toJson();

    /** Reads a record value strictly by its {@code kind}; throws {@link MalformedRecordException} naming the field. */
    static Notice read(String json) {
        Fields f = Fields.parse("notice", json).version(VERSION);
        String kind = f.oneOf("kind", Set.of(im.protocol.Event.JOIN, im.protocol.Event.LEAVE, ReadNotice.KIND));
        return kind.equals(ReadNotice.KIND) ? ReadNotice.read(f) : MembershipNotice.read(f);
    }
}
