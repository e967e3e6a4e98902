package im.store.cursor;

import im.infra.identity.DevicePrincipal;

/** One device's ack: "I durably stored every visible event of conv up to seq". */
public record AckRequest(DevicePrincipal who, String conv, long seq) {}
