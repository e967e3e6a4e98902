package im.infra.fault;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** The named places where a test may inject a fault (see {@link Faults}). */
public enum FaultPoint {
    /** Inside the send transaction, after the seq was allocated, before the event INSERT (halt or fail). */
    SEND_BEFORE_INSERT("send.before_insert"),
    /** Inside the send transaction, after the INSERT, before COMMIT. */
    SEND_BEFORE_COMMIT("send.before_commit"),
    /** Before the COMMIT of a group-commit transaction that writes two or more sends (halt). */
    SEND_BATCH_BEFORE_COMMIT("send.batch_before_commit"),
    /** After the send transaction committed, before the {@code sent} reply is written. */
    API_AFTER_SEND_COMMIT("api.after_send_commit"),
    /** The gateway writing a {@code sent} reply. */
    GW_REPLY_SEND("gw.reply.send"),
    /** The gateway writing an {@code acked} reply (the cursor was written; the device does not learn it). */
    GW_REPLY_ACK("gw.reply.ack"),
    /** An {@code ack} frame arriving at the gateway: dropped as if lost on the way (nothing written, no reply). */
    GW_ACK("gw.ack"),
    /** The gateway writing an {@code event} push. */
    GW_PUSH("gw.push"),
    /** The gateway writing a device's interest registration: dropped as if the publish failed unseen (the digest still counts it). */
    GW_INTEREST("gw.interest");

    private final String wireName;

    FaultPoint(String wireName) {
        this.wireName = wireName;
    }

    public String wireName() {
        return wireName;
    }

    public static FaultPoint byName(String name) {
        for (FaultPoint p : values()) {
            if (p.wireName.equals(name)) return p;
        }
        return null;
    }

    public static List<String> names() {
        return Arrays.stream(values()).map(FaultPoint::wireName).collect(Collectors.toList());
    }
}
