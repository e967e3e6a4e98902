package im.topics;

import java.util.Objects;

/**
 * A record of {@code <prefix>gateways} ({@code v:1}, internal, key = gateway id): gateway
 * {@code gateway} of generation {@code gen} (its start time) was alive at {@code at} (its clock, ms).
 */
public record Heartbeat(String gateway, long gen, long at) {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = 1;

    public Heartbeat {
        Objects.requireNonNull(gateway, "gateway");
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    public static Heartbeat read(String json) {
        Fields f = Fields.parse("heartbeat", json).version(VERSION);
        return new Heartbeat(f.id("gateway"), f.integral("gen"), f.integral("at"));
    }

    public String toJson() {
        return RouteJson.JSON.createObjectNode().put("v", VERSION).put("gateway", gateway).put("gen", gen).put("at", at).toString();
    }
}
