package im.infra.identity;

/**
 * An authenticated device: who it belongs to, which install of it is talking, and which credential
 * of that install authenticated the session ({@code devices.credential}: 0 for the token issued
 * with the install, one more at every renewal, revocation or reinstall). Every request checks both
 * numbers against the device's row in its own transaction.
 */
public record DevicePrincipal(String userId, String deviceId, int installEpoch, long credential) {
    /** What a request hears (with BAD_TOKEN) when its session's credential is no longer the device's. */
    public static final String CREDENTIAL_SUPERSEDED =
            "the token of this session was renewed or revoked; connect again with the current token";

    /** A session of the install's first credential (never renewed nor revoked). */
    public DevicePrincipal(String userId, String deviceId, int installEpoch) {
        this(userId, deviceId, installEpoch, 0);
    }
}
