package im.sweeper;

import im.infra.role.RoleRunner;

/**
 * Runs one sweeper instance and its ops server ({@code /healthz}, {@code /readyz} = Streams
 * RUNNING, {@code /metrics} on IM_OPS_PORT). Prints {@code IM_READY sweeper ops=<url>} once started
 * and {@code IM_RUNNING sweeper} once it punctuates ({@link RoleRunner}).
 */
public final class SweeperMain {
    private SweeperMain() {}

    public static void main(String[] args) throws InterruptedException {
        RoleRunner.run(Sweeper.role());
    }
}
