package im.testkit;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Certificates a TLS test makes for itself (EC P-256, valid from an hour ago for a day), written as
 * the PEM files the gateway ({@code IM_TLS_CERT}, {@code IM_TLS_KEY}) and the clients ({@code caFile},
 * {@code --ca-file}) read: certificates as {@code CERTIFICATE}, keys as PKCS#8 {@code PRIVATE KEY}.
 */
public final class TestCertificates {
    private static final AtomicLong SERIALS = new AtomicLong(System.currentTimeMillis());

    private TestCertificates() {
    }

    /**
     * A private CA and a server certificate it signed for {@code ip} (an IP address subject
     * alternative name only, so a client connecting by a host name fails the name check): in
     * {@code dir}, {@code <name>-ca.pem} (what a client trusts), {@code <name>-cert.pem} (the chain,
     * leaf first) and {@code <name>-key.pem}.
     */
    public record PrivateCa(Path caFile, Path certFile, Path keyFile, X509Certificate ca, X509Certificate leaf) {}

    public static PrivateCa privateCa(Path dir, String name, String ip) throws IOException {
        return privateCa(dir, name, ip, keyPair());
    }

    private static PrivateCa privateCa(Path dir, String name, String ip, KeyPair caKeys) throws IOException {
        X500Name caName = new X500Name("CN=" + name + " test CA");
        X509Certificate ca = sign(new JcaX509v3CertificateBuilder(caName, serial(), notBefore(), notAfter(), caName, caKeys.getPublic()),
                true, null, caKeys.getPrivate());
        KeyPair leafKeys = keyPair();
        X509Certificate leaf = sign(new JcaX509v3CertificateBuilder(caName, serial(), notBefore(), notAfter(),
                new X500Name("CN=" + name), leafKeys.getPublic()), false, ip, caKeys.getPrivate());
        PrivateCa out = new PrivateCa(dir.resolve(name + "-ca.pem"), dir.resolve(name + "-cert.pem"), dir.resolve(name + "-key.pem"), ca, leaf);
        Files.writeString(out.caFile(), pem("CERTIFICATE", encoded(ca)), StandardCharsets.US_ASCII);
        Files.writeString(out.certFile(), pem("CERTIFICATE", encoded(leaf)) + pem("CERTIFICATE", encoded(ca)), StandardCharsets.US_ASCII);
        Files.writeString(out.keyFile(), pem("PRIVATE KEY", leafKeys.getPrivate().getEncoded()), StandardCharsets.US_ASCII);
        return out;
    }

    /**
     * As {@link #privateCa(Path, String, String)}, plus a client certificate for {@code clientCn}
     * signed by the same CA: {@code <name>-client.pem} and its key as PKCS#8 DER in
     * {@code <name>-client.pk8} (the form PostgreSQL's JDBC driver reads from {@code sslkey}).
     */
    public record WithClient(PrivateCa ca, Path clientCertFile, Path clientKeyFile) {}

    public static WithClient privateCaWithClient(Path dir, String name, String ip, String clientCn) throws IOException {
        KeyPair caKeys = keyPair();
        PrivateCa ca = privateCa(dir, name, ip, caKeys);
        KeyPair clientKeys = keyPair();
        X509Certificate client = sign(new JcaX509v3CertificateBuilder(new X500Name("CN=" + name + " test CA"), serial(), notBefore(), notAfter(),
                new X500Name("CN=" + clientCn), clientKeys.getPublic()), false, ip, caKeys.getPrivate());
        WithClient out = new WithClient(ca, dir.resolve(name + "-client.pem"), dir.resolve(name + "-client.pk8"));
        Files.writeString(out.clientCertFile(), pem("CERTIFICATE", encoded(client)), StandardCharsets.US_ASCII);
        Files.write(out.clientKeyFile(), clientKeys.getPrivate().getEncoded());
        return out;
    }

    /** A self-signed server certificate for {@code ip}, written to {@code certFile} and its key to {@code keyFile}. */
    public static X509Certificate selfSigned(String cn, String ip, Path certFile, Path keyFile) throws IOException {
        KeyPair keys = keyPair();
        X500Name name = new X500Name("CN=" + cn);
        X509Certificate cert = sign(new JcaX509v3CertificateBuilder(name, serial(), notBefore(), notAfter(), name, keys.getPublic()),
                false, ip, keys.getPrivate());
        Files.writeString(certFile, pem("CERTIFICATE", encoded(cert)), StandardCharsets.US_ASCII);
        Files.writeString(keyFile, pem("PRIVATE KEY", keys.getPrivate().getEncoded()), StandardCharsets.US_ASCII);
        return cert;
    }

    private static X509Certificate sign(JcaX509v3CertificateBuilder b, boolean ca, String ip, PrivateKey issuerKey) {
        try {
            if (ca) {
                b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
                b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            } else {
                b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.iPAddress, ip)));
            }
            return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKey)));
        } catch (CertIOException | OperatorCreationException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a test certificate: " + e, e);
        }
    }

    private static KeyPair keyPair() {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
            g.initialize(256);
            return g.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("no EC key generator: " + e, e);
        }
    }

    private static byte[] encoded(X509Certificate c) {
        try {
            return c.getEncoded();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static BigInteger serial() {
        return BigInteger.valueOf(SERIALS.incrementAndGet());
    }

    private static Date notBefore() {
        return Date.from(Instant.now().minusSeconds(3600));
    }

    private static Date notAfter() {
        return Date.from(Instant.now().plusSeconds(86_400));
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
