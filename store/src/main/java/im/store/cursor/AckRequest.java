package im.store.cursor;

import im.infra.identity.DevicePrincipal;
import im.topics.PairKey;

/** One device's ack: "I durably stored every visible event of conv up to seq". */
public record AckRequest(DevicePrincipal who, String conv, long seq) {
    /** The acked (conversation, device) pair as a {@link PairKey}: the key acks of one pair collapse under. */
    String pair() {
        return PairKey.of(conv, who.deviceId());
    }
}
