package im.client.api;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A PEM file of CA certificates to trust instead of the JVM's trust store: what
 * {@link ClientOptions#caFile()} names. The SDK uses it for its WebSocket; an application can use
 * {@link #sslContext} for its own HTTPS calls to the gateway (its client HTTP API), so both trust
 * the same certificates. Host names are verified by the caller ({@code java.net.http.HttpClient}
 * does by default).
 */
public final class CaFile {
    private CaFile() {
    }

    /** An {@link SSLContext} (protocol "TLS") that trusts exactly the certificates of {@code file}. */
    public static SSLContext sslContext(Path file) throws CaFileException {
        return sslContext(certificates(file));
    }

    /** The certificates of {@code file}, in file order: one or more PEM {@code CERTIFICATE} blocks. */
    public static List<X509Certificate> certificates(Path file) throws CaFileException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new CaFileException(file, "cannot read it: " + e, e);
        }
        List<X509Certificate> certs = new ArrayList<>();
        try {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(bytes))) {
                certs.add((X509Certificate) c);
            }
        } catch (CertificateException e) {
            throw new CaFileException(file, "not a PEM certificate file (-----BEGIN CERTIFICATE-----): " + e.getMessage(), e);
        }
        if (certs.isEmpty()) {
            throw new CaFileException(file, "holds no certificate (expected PEM -----BEGIN CERTIFICATE-----)", null);
        }
        return List.copyOf(certs);
    }

    /**
     * The certificate check that failed a TLS handshake, if that is what {@code failure} (an exception of a
     * connection attempt, any wrapping) comes from: the certificate is not signed by a trusted CA, has
     * expired, or names another host. Null for any other failure.
     */
    public static CertificateException rejection(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof CertificateException c) {
                return c;
            }
        }
        return null;
    }

    /** An {@link SSLContext} (protocol "TLS") that trusts exactly {@code certs}, e.g. those of {@link #certificates}. */
    public static SSLContext sslContext(List<X509Certificate> certs) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            for (int i = 0; i < certs.size(); i++) {
                store.setCertificateEntry("ca-" + i, certs.get(i));
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            // an in-memory PKCS12 store and the default TLS provider are part of every JDK
            throw new IllegalStateException("the JDK cannot build a TLS trust store: " + e, e);
        }
    }
}
