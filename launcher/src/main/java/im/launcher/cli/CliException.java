package im.launcher.cli;

/**
 * A client command failed for a reason the user can act on (unreachable service, refused request,
 * server error code). {@code im} prints the message as one line on stderr and exits with
 * {@link #EXIT_CODE}; no stack trace.
 */
public class CliException extends RuntimeException {
    /** The exit code of a failed client command (2 is picocli's code for a usage error). */
    public static final int EXIT_CODE = 1;

    public CliException(String message) {
        super(message);
    }
}
