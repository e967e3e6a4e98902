package im.launcher;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code im} command: one jar, every role. {@code im platform} runs everything on one machine
 * (embedded PostgreSQL and Kafka unless IM_PG_URL / IM_KAFKA_BOOTSTRAP name external ones);
 * {@code im gateway} runs one role against shared services.
 *
 * <p>Two kinds of subcommands: <b>roles</b> (classes implementing {@link Role}: platform, gateway,
 * relay, delivery, sweeper) start long-running parts of the platform — the compose stack runs
 * exactly these; <b>clients</b> (admin, send, tail, lag, events) talk to a running platform and
 * exit.
 */
@Command(name = "im", mixinStandardHelpOptions = true, version = "im 0.1.0",
        description = "Kafka-backed event-log messaging platform.",
        subcommands = {PlatformCommand.class, GatewayCommand.class, RelayCommand.class, DeliveryCommand.class, SweeperCommand.class, CommandLine.HelpCommand.class})
public final class Im implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        int code = new CommandLine(new Im())
                .setExecutionExceptionHandler((ex, cmd, parsed) -> {
                    if (ex instanceof im.infra.config.ConfigException) {
                        cmd.getErr().println("configuration error: " + ex.getMessage());
                        return 2;
                    }
                    throw ex;
                })
                .execute(args);
        // Roles keep non-daemon threads (broker, Undertow, pools): exit explicitly once the command
        // returned; the shutdown hooks close what it started.
        System.exit(code);
    }
}
