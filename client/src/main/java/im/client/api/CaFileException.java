package im.client.api;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The CA file of {@link ClientOptions#caFile()} cannot be used: it cannot be read, or it holds no
 * PEM certificate ({@code -----BEGIN CERTIFICATE-----}), or one of its certificates does not parse.
 * Thrown by {@link im.client.ImClient#open} (and {@link CaFile#sslContext}) before anything connects; fix the
 * file or the option, retrying cannot help.
 */
public class CaFileException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final String problem;

    public CaFileException(Path file, String problem, Throwable cause) {
        super("caFile " + file + ": " + problem, cause);
        this.file = file;
        this.problem = problem;
    }

    /** What is wrong with the file ("cannot read it: ...", "holds no certificate ..."), without its name. */
    public String problem() {
        return problem;
    }

    /** The file that was given. */
    public Path file() {
        return file;
    }
}
