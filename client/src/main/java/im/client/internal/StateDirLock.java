package im.client.internal;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exclusive claim of one open client on its state directory: an OS file lock on
 * {@code <stateDir>/lock}, held from open until the client's threads stopped. Two stores
 * appending to one {@code events.log} (or rewriting one outbox) would corrupt it, so a second
 * open, in this process or another, fails instead. The OS drops the lock when the process dies,
 * so a killed app never leaves its directory locked.
 */
final class StateDirLock implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StateDirLock.class);
    static final String FILE = "lock";

    private final FileChannel channel;
    private final FileLock lock;

    private StateDirLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** @throws IOException naming the directory if another open client holds it */
    static StateDirLock acquire(Path stateDir) throws IOException {
        Files.createDirectories(stateDir);
        FileChannel ch = FileChannel.open(stateDir.resolve(FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null; // held by another client in this JVM
        } catch (IOException e) {
            ch.close();
            throw e;
        }
        if (lock == null) {
            ch.close();
            throw new IOException("state directory " + stateDir.toAbsolutePath() + " is in use by another open client"
                    + " (in this process or another): one directory belongs to one client; close that one first");
        }
        return new StateDirLock(ch, lock);
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException e) {
            log.warn("releasing the state directory lock: {}", e.toString());
        }
    }
}
