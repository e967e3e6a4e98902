package im.topics;

/**
 * A record of {@code <prefix>typing} ({@code v:1}, internal; key: the conversation): {@code user}
 * is typing in {@code conv} on {@code device} ({@code at}: the gateway's clock, epoch ms). Written
 * by the gateway that took the device's {@code typing} frame; a delivery node routes it to the
 * gateways of the conversation's other members' online devices ({@link ChannelRecord.TypingFor}).
 * Ephemeral: the topic keeps a minute of them, nothing stores them elsewhere.
 */
public record TypingRecord(String conv, String user, String device, long at) {
    /** Schema version written as {@code "v"}. */
    public static final int VERSION = 1;
    private static final String RECORD = "typing record";

    public TypingRecord {
        if (conv == null || user == null || device == null) throw new NullPointerException("a typing record needs its conv, user and device");
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    public static TypingRecord read(String json) {
        Fields f = Fields.parse(RECORD, json).version(VERSION);
        return new TypingRecord(f.id("conv"), f.id("user"), f.id("device"), f.integral("at"));
    }

    public String toJson() {
        return RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("user", user).put("device", device)
                .put("at", at).toString();
    }
}
