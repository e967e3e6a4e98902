package im.launcher;

import im.launcher.cli.AdminCommand;
import im.launcher.cli.CliException;
import im.launcher.cli.EditCommand;
import im.launcher.cli.EventsCommand;
import im.launcher.cli.LagCommand;
import im.launcher.cli.ReadCommand;
import im.launcher.cli.RecallCommand;
import im.launcher.cli.ReceiptsCommand;
import im.launcher.cli.SendCommand;
import im.launcher.cli.TailCommand;
import im.launcher.cli.TypingCommand;
import im.launcher.cli.UnreadCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code im} command: one jar, every role. {@code im platform} runs everything on one machine
 * (embedded PostgreSQL and Kafka unless IM_PG_URL / IM_KAFKA_BOOTSTRAP name external ones);
 * {@code im gateway} runs one role against shared services.
 *
 * <p>Two kinds of subcommands: <b>roles</b> (classes implementing {@link RoleCommand}: platform, gateway,
 * relay, delivery, sweeper) start long-running parts of the platform — the compose stack runs
 * exactly these; <b>clients</b> (admin, send, edit, recall, receipts, typing, tail, read, unread, lag,
 * events) talk to a running platform and exit. A client command that fails prints one line on stderr and exits 1
 * ({@link CliException}); a usage error prints the usage and exits 2.
 */
@Command(name = "im", mixinStandardHelpOptions = true, version = "im 0.1.0",
        description = "Kafka-backed event-log messaging platform.",
        subcommands = {PlatformCommand.class, RoleCommands.Gateway.class, RoleCommands.Relay.class, RoleCommands.Delivery.class,
                RoleCommands.Sweeper.class,
                AdminCommand.class, SendCommand.class, EditCommand.class, RecallCommand.class, ReceiptsCommand.class, TypingCommand.class,
                TailCommand.class, ReadCommand.class, UnreadCommand.class, LagCommand.class, EventsCommand.class,
                CommandLine.HelpCommand.class})
public final class Im implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** The {@code im} command line with its error handling; tests run commands through it. */
    public static CommandLine commandLine() {
        return new CommandLine(new Im())
                .setExecutionExceptionHandler((ex, cmd, parsed) -> {
                    if (ex instanceof im.infra.config.ConfigException) {
                        cmd.getErr().println("configuration error: " + ex.getMessage());
                        cmd.getErr().flush();
                        return 2;
                    }
                    if (ex instanceof CliException) {
                        cmd.getErr().println(ex.getMessage());
                        cmd.getErr().flush();
                        return CliException.EXIT_CODE;
                    }
                    if (!(cmd.getCommand() instanceof RoleCommand)) {   // a client command: one line, never a stack trace
                        cmd.getErr().println("error: " + ex);
                        cmd.getErr().flush();
                        return CliException.EXIT_CODE;
                    }
                    throw ex;
                });
    }

    public static void main(String[] args) {
        int code = commandLine().execute(args);
        // Roles keep non-daemon threads (broker, Undertow, pools): exit explicitly once the command
        // returned; the shutdown hooks close what it started.
        System.exit(code);
    }
}
