package im.client.api;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The client's local database ({@code <stateDir>/client.db}) cannot be used as it is. {@link #problem()}
 * says why; {@link #file()} names the file. The SDK never repairs, drops or recreates such a file by
 * itself: what it holds (unsent messages in the outbox, stored events) would be lost silently. Move
 * the file away (or restore it) and open again; a fresh store syncs the events from the server again.
 */
public class LocalStoreException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Why the store cannot be used. */
    public enum Problem {
        /** Not a SQLite database, or SQLite found a damaged page (SQLITE_CORRUPT / SQLITE_NOTADB). */
        DAMAGED,
        /** Written by a newer SDK: its schema version is above the one this SDK reads. */
        NEWER_SCHEMA,
        /** Any other failure of the database (disk full, I/O error, ...). */
        FAILED
    }

    private final Problem problem;
    private final transient Path file;

    public LocalStoreException(Problem problem, Path file, String detail, Throwable cause) {
        super("client store " + file.toAbsolutePath() + ": " + detail, cause);
        this.problem = Objects.requireNonNull(problem, "problem");
        this.file = file;
    }

    public Problem problem() {
        return problem;
    }

    /** The database file. */
    public Path file() {
        return file;
    }
}
