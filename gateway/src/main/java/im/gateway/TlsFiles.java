package im.gateway;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * The gateway's TLS identity from two PEM files ({@code IM_TLS_CERT}: the certificate chain,
 * leaf first; {@code IM_TLS_KEY}: its private key in PKCS#8, {@code BEGIN PRIVATE KEY}, RSA or
 * EC). A file that cannot be read or parsed is a clear error naming the file, never the key.
 */
final class TlsFiles {
    private TlsFiles() {
    }

    /** A server {@link SSLContext} for the chain and key in the two files. */
    static SSLContext load(Path certFile, Path keyFile) {
        try {
            Collection<? extends Certificate> chain;
            try (ByteArrayInputStream in = new ByteArrayInputStream(Files.readAllBytes(certFile))) {
                chain = CertificateFactory.getInstance("X.509").generateCertificates(in);
            }
            if (chain.isEmpty()) throw new IllegalArgumentException(certFile + ": no certificate (expected PEM BEGIN CERTIFICATE)");
            PrivateKey key = privateKey(keyFile);
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            char[] none = new char[0];
            store.setKeyEntry("gateway", key, none, chain.toArray(new Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(store, none);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            return ctx;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + e.getMessage(), e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(certFile + " / " + keyFile + ": not a usable certificate and key: " + e.getMessage(), e);
        }
    }

    private static PrivateKey privateKey(Path keyFile) throws IOException, GeneralSecurityException {
        String pem = Files.readString(keyFile, StandardCharsets.US_ASCII);
        String begin = "-----BEGIN PRIVATE KEY-----";
        int from = pem.indexOf(begin);
        int to = pem.indexOf("-----END PRIVATE KEY-----");
        if (from < 0 || to < from) {
            throw new IllegalArgumentException(keyFile + ": expected a PKCS#8 PEM key (BEGIN PRIVATE KEY); convert one with"
                    + " openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem");
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
        for (String algorithm : new String[] {"RSA", "EC"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (GeneralSecurityException tryNext) {
                // the other algorithm
            }
        }
        throw new IllegalArgumentException(keyFile + ": neither an RSA nor an EC private key");
    }
}
