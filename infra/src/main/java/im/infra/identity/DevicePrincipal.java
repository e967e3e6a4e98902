package im.infra.identity;

/** An authenticated device: who it belongs to and which install of it is talking. */
public record DevicePrincipal(String userId, String deviceId, int installEpoch) {}
