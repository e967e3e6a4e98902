package im.launcher.cli;

import java.io.PrintWriter;
import java.net.URI;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The options of a command that acts as one device ({@code im send}, {@code im edit},
 * {@code im recall}, {@code im receipts}, {@code im typing}, {@code im tail}, {@code im read},
 * {@code im unread}): where the gateway is and which CA to trust for it, and the
 * device's token.
 */
public final class DeviceLogin {
    @Mixin
    GatewayOption gateway;

    @Mixin
    CaFileOption trust;

    @Option(names = "--token", required = true, paramLabel = "TOKEN", description = "The device's token (from `im admin device register`).")
    String token;

    /** Connects and authenticates as the device, saying so on {@code err}. */
    DeviceSocket connect(PrintWriter err) {
        err.println("connecting to " + gateway.webSocket() + " ...");
        err.flush();
        URI uri = gateway.webSocket();
        return DeviceSocket.open(trust.httpClient(uri, gateway.timeout()), uri, token, gateway.timeout());
    }
}
