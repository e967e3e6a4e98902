package im.delivery.route;

import im.infra.role.RoleRunner;

/**
 * Runs one delivery node and its ops server ({@code /healthz}, {@code /readyz} = Streams RUNNING,
 * {@code /metrics} on IM_OPS_PORT). Prints {@code IM_READY delivery ops=<url>} once started and
 * {@code IM_RUNNING delivery} once its tasks are assigned and stores restored ({@link RoleRunner}).
 */
public final class DeliveryMain {
    private DeliveryMain() {}

    public static void main(String[] args) throws InterruptedException {
        RoleRunner.run(DeliveryNode.role());
    }
}
