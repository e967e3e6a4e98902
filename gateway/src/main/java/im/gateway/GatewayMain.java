package im.gateway;

import im.infra.role.RoleRunner;

/**
 * Runs one gateway against the PostgreSQL named by IM_PG_URL; its admin API and ops endpoints
 * ({@code /healthz}, {@code /readyz}, {@code /metrics}) are on its admin listener (IM_ADMIN_PORT).
 * Prints {@code IM_READY gateway port=<port> admin=<admin port> id=<id>} on stdout once it accepts connections and
 * {@code IM_RUNNING gateway} once ready ({@link RoleRunner}); tests and scripts wait for those lines.
 */
public final class GatewayMain {
    private GatewayMain() {}

    public static void main(String[] args) throws InterruptedException {
        RoleRunner.run(Gateway.role());
    }
}
