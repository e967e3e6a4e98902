package im.relay;

import im.infra.role.RoleRunner;

/**
 * Runs one CDC relay (active, or standby until the active one dies) and its ops server
 * ({@code /healthz}, {@code /readyz}, {@code /metrics} on IM_OPS_PORT). Prints
 * {@code IM_READY relay slot=<slot> ops=<url>} on stdout once started ({@link RoleRunner}).
 */
public final class RelayMain {
    private RelayMain() {}

    public static void main(String[] args) throws InterruptedException {
        RoleRunner.run(CdcRelay.role());
    }
}
