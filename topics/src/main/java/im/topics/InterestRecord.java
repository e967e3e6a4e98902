package im.topics;

import java.util.Objects;

/**
 * A registration on {@code <prefix>interest} ({@link InterestMessage}): device {@code device} of
 * the conversation {@code conv} is (or is no longer) reachable as {@link Interest} says. Written
 * by the gateways when a device subscribes, joins or disconnects (and again when a delivery node or
 * the sweeper asks for a partition's registrations, see {@link InterestDigest}), read by the
 * delivery nodes and the sweeper.
 */
public record InterestRecord(String conv, String device, Interest interest) implements InterestMessage {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = InterestMessage.VERSION;

    public InterestRecord {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(interest, "interest");
    }

    /** Reads a registration strictly (a digest is refused); throws {@link MalformedRecordException} naming the field. */
    public static InterestRecord read(String json) {
        return read(Fields.parse("interest record", json).version(VERSION));
    }

    static InterestRecord read(Fields f) {
        return new InterestRecord(f.id("conv"), f.id("device"), Interest.read(f));
    }

    /** This registration's term in its gateway's {@link InterestDigest} (while online). */
    public long digestTerm() {
        return InterestDigest.term(conv, device, interest.ver());
    }

    @Override
    public String toJson() {
        return interest.write(RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("device", device)).toString();
    }
}
