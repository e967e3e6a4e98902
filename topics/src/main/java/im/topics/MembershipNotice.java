package im.topics;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * A record of {@code <prefix>notices} ({@code v:1}, internal): user {@code user} joined or left
 * the conversation by the event {@code ev} (whose kind and sender it repeats). The delivery nodes
 * write it for every join/leave; every gateway reads it to keep its connections' visibility. For a
 * bulk join, {@code ev} carries the list of users ({@code user} is its first), so one notice per
 * event tells every gateway about all the users it added: O(added users) bytes, not a notice each.
 */
public record MembershipNotice(String kind, String user, EventRecord ev) implements Notice {
    private static final String RECORD = "membership notice";

    public MembershipNotice {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(ev, "ev");
    }

    /** The notice of a join or leave event. */
    public static MembershipNotice of(EventRecord ev) {
        if (!ev.isMembership()) throw new IllegalArgumentException("not a membership event: " + ev.kind());
        return new MembershipNotice(ev.kind(), ev.sender(), ev);
    }

    public boolean isJoin() {
        return im.protocol.Event.JOIN.equals(kind);
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    public static MembershipNotice read(String json) {
        return read(Fields.parse(RECORD, json).version(VERSION));
    }

    static MembershipNotice read(Fields f) {
        String kind = f.oneOf("kind", java.util.Set.of(im.protocol.Event.JOIN, im.protocol.Event.LEAVE));
        MembershipNotice n = new MembershipNotice(kind, f.id("user"), EventRecord.read(f.object("ev")));
        if (!n.kind.equals(n.ev.kind()) || !n.user.equals(n.ev.sender())) {
            throw new MalformedRecordException(RECORD, "fields 'kind' and 'user' must repeat the event's kind and sender");
        }
        if (n.ev.isBulk() && n.ev.users() == null) {
            throw new MalformedRecordException(RECORD, "field 'ev' is a bulk join without its 'users'");
        }
        return n;
    }

    /** Every user this notice is about: the one who joined or left, or each user of a bulk join. */
    public java.util.List<String> users() {
        return ev.members();
    }

    @Override
    public String toJson() {
        ObjectNode o = RouteJson.JSON.createObjectNode().put("v", VERSION).put("kind", kind).put("user", user);
        o.set("ev", ev.toJsonNode());
        return o.toString();
    }
}
