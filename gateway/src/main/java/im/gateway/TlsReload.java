package im.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reloads the gateway's certificate and key when either file changes (a renewal by an ACME
 * client, say): new connections get the new certificate, open ones keep theirs. A change that
 * does not parse (a half-written file) is logged and retried at the next look; the old identity
 * stays in use meanwhile.
 */
final class TlsReload {
    private static final Logger log = LoggerFactory.getLogger(TlsReload.class);
    private final Path cert;
    private final Path key;
    private final Consumer<SSLContext> install;
    private FileTime certSeen;
    private FileTime keySeen;
    final AtomicLong reloads = new AtomicLong();

    TlsReload(Path cert, Path key, Consumer<SSLContext> install) {
        this.cert = cert;
        this.key = key;
        this.install = install;
        this.certSeen = modified(cert);
        this.keySeen = modified(key);
    }

    /** One look: reloads if a file's modification time moved. */
    synchronized void check() {
        FileTime c = modified(cert);
        FileTime k = modified(key);
        if (c == null || k == null || (c.equals(certSeen) && k.equals(keySeen))) return;
        try {
            install.accept(TlsFiles.load(cert, key));
            certSeen = c;
            keySeen = k;
            reloads.incrementAndGet();
            log.info("TLS certificate reloaded from {}", cert);
        } catch (RuntimeException e) {
            log.warn("TLS files changed but cannot be loaded (the previous certificate stays in use): {}", e.getMessage());
        }
    }

    private static FileTime modified(Path p) {
        try {
            return Files.getLastModifiedTime(p);
        } catch (IOException e) {
            return null;
        }
    }
}
