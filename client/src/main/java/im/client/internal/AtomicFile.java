package im.client.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Crash-safe replacement of a small state file: write a temp file in the same directory,
 * fsync it, rename it atomically over the target, fsync the directory. After a crash the
 * target holds either the old or the new content, never a mix. Shared by every durable
 * client store (outbox, later the local event store).
 */
final class AtomicFile {
    private static final Logger log = LoggerFactory.getLogger(AtomicFile.class);
    private static final String TMP_SUFFIX = ".tmp";

    private AtomicFile() {
    }

    /** Durably replaces {@code target} with {@code data}. The temp file never survives a successful call. */
    static void write(Path target, byte[] data) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        Path tmp = Files.createTempFile(dir, target.getFileName() + ".", TMP_SUFFIX);
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        fsyncDirectory(dir);
    }

    /** Makes the rename itself durable. Some filesystems refuse to fsync a directory; that is not an error. */
    static void fsyncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            log.debug("cannot fsync directory {} (filesystem does not support it): {}", dir, e.toString());
        }
    }

    /** Deletes temp files of {@code target} left by a crash between create and rename; they never hold committed state. */
    static void deleteStaleTemps(Path target) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        String glob = target.getFileName() + ".*" + TMP_SUFFIX;
        try (DirectoryStream<Path> temps = Files.newDirectoryStream(dir, glob)) {
            for (Path t : temps) {
                log.info("deleting stale temp file {} (left by an interrupted write)", t);
                Files.deleteIfExists(t);
            }
        }
    }
}
