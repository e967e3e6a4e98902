package im.launcher.cli;

import im.client.api.CaFile;
import im.client.api.CaFileException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code --ca-file FILE} (default {@code IM_CA_FILE}): the CA certificates a client command trusts for
 * an {@code https://} or {@code wss://} gateway or admin listener instead of the JVM's trust store, read the way the
 * Java SDK reads its {@code caFile} ({@link CaFile}). Host names are verified either way.
 */
public final class CaFileOption {
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Option(names = "--ca-file", paramLabel = "FILE",
            description = "PEM file of the CA certificates to trust for an https:// or wss:// --gateway or --admin-url, instead of the JVM's trust store (default: the IM_CA_FILE variable).")
    Path caFile;

    /**
     * An HttpClient for {@code gateway} that trusts the CA file, if one is given and the gateway speaks
     * TLS, else the JVM's trust store. A usage error if the file cannot be used, or if {@code --ca-file}
     * is given for a plain {@code http://} gateway (IM_CA_FILE is then ignored).
     */
    HttpClient httpClient(URI gateway, Duration connectTimeout) {
        boolean tls = "https".equals(gateway.getScheme()) || "wss".equals(gateway.getScheme());
        if (caFile != null && !tls) {
            throw usage("--ca-file: only for an https:// or wss:// URL, got " + gateway);
        }
        Path file = caFile != null ? caFile
                : Settings.fromEnvironment().optional(ConfigKeys.CA_FILE).filter(f -> tls && !f.isBlank()).map(Path::of).orElse(null);
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(connectTimeout);
        if (file != null) {
            try {
                b.sslContext(CaFile.sslContext(file));
            } catch (CaFileException e) {
                throw usage((caFile != null ? "--ca-file " : ConfigKeys.CA_FILE.name() + " ") + file + ": " + e.problem());
            }
        }
        return b.build();
    }

    private ParameterException usage(String msg) {
        return new ParameterException(mixee.commandLine(), msg);
    }
}
