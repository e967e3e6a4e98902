package im.topics;

import java.util.Objects;

/**
 * A record of {@code <prefix>interest} ({@code v:2}, internal, docs/topics.md): device
 * {@code device} of the conversation {@code conv} is (or is no longer) reachable as
 * {@link Interest} says. Written by the gateways, read by the delivery nodes and the sweeper.
 */
public record InterestRecord(String conv, String device, Interest interest) {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = 2;

    public InterestRecord {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(interest, "interest");
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    public static InterestRecord read(String json) {
        Fields f = Fields.parse("interest record", json).version(VERSION);
        return new InterestRecord(f.id("conv"), f.id("device"), Interest.read(f));
    }

    public String toJson() {
        return interest.write(RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("device", device)).toString();
    }
}
