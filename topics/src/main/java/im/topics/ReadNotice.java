package im.topics;

import im.protocol.ReadState;

/**
 * A record of {@code <prefix>notices} ({@code v:1}, {@code kind:"read"}, internal): user
 * {@code user} moved its read cursor of {@code conv} from device {@code device}; {@code state} is
 * the read state after it. The gateway that took the read writes it once the read committed;
 * every gateway reads it and pushes an {@code unread} frame to the user's other connections.
 */
public record ReadNotice(String conv, String user, String device, ReadState state) implements Notice {
    public static final String KIND = "read";
    private static final String RECORD = "read notice";

    public ReadNotice {
        if (conv == null || user == null || device == null || state == null) {
            throw new NullPointerException("a read notice needs its conv, user, device and state");
        }
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    static ReadNotice read(Fields f) {
        long read = f.integral("read");
        long unread = f.integral("unread");
        long head = f.integral("head");
        if (read < 0 || unread < 0 || head < 0) {
            throw new MalformedRecordException(RECORD, "fields 'read', 'unread' and 'head' must not be negative");
        }
        return new ReadNotice(f.id("conv"), f.id("user"), f.id("device"), new ReadState(read, unread, head));
    }

    @Override
    public String toJson() {
        return RouteJson.JSON.createObjectNode().put("v", VERSION).put("kind", KIND).put("conv", conv).put("user", user)
                .put("device", device).put("read", state.read()).put("unread", state.unread()).put("head", state.head())
                .toString();
    }
}
