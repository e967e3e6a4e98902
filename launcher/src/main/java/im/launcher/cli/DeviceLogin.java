package im.launcher.cli;

import java.io.PrintWriter;
import java.net.URI;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The options of a command that acts as one device in one conversation ({@code im send},
 * {@code im tail}): where the gateway is and which CA to trust for it, the device's token and the conversation.
 */
public final class DeviceLogin {
    @Mixin
    GatewayOption gateway;

    @Mixin
    CaFileOption trust;

    @Option(names = "--token", required = true, paramLabel = "TOKEN", description = "The device's token (from `im admin device register`).")
    String token;

    @Option(names = "--conv", required = true, paramLabel = "CONV", description = "Conversation id.")
    String conv;

    /** Connects and authenticates as the device, saying so on {@code err}. */
    DeviceSocket connect(PrintWriter err) {
        err.println("connecting to " + gateway.webSocket() + " ...");
        err.flush();
        URI uri = gateway.webSocket();
        return DeviceSocket.open(trust.httpClient(uri, gateway.timeout()), uri, token, gateway.timeout());
    }
}
