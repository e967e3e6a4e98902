package im.launcher.cli;

import im.protocol.Send;
import im.protocol.Sent;
import java.io.PrintWriter;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code im send}: connects as a device, sends one message and prints the committed seq. Without a
 * reply the message may or may not be stored; resending with the same {@code --cmid} tells which
 * (the server answers {@code dup=true} with the original seq).
 */
@Command(name = "send", mixinStandardHelpOptions = true,
        description = "Send one message as a device (WebSocket) and print its seq, mid and dup flag.")
public final class SendCommand implements Callable<Integer> {
    @Mixin
    DeviceLogin login;

    @Option(names = "--conv", required = true, paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Option(names = "--cmid", paramLabel = "CMID",
            description = "Client message id (idempotency key; default: a new UUID). Resend with the same cmid after a timeout: the reply then says dup=true.")
    String cmid;

    @Parameters(index = "0", paramLabel = "TEXT", description = "The message body (1 to 16384 UTF-8 bytes).")
    String text;

    @Override
    public Integer call() {
        PrintWriter err = login.gateway.err();
        String id = cmid != null ? cmid : UUID.randomUUID().toString();
        try (DeviceSocket s = login.connect(err)) {
            err.println("authenticated as " + s.authed().user() + " / " + s.authed().device() + "; sending cmid " + id);
            err.flush();
            Sent sent = s.commit(new Send(s.nextRid(), conv, id, text), id, "message");
            PrintWriter out = login.gateway.out();
            out.println("sent " + sent.conv() + " seq=" + sent.seq() + " mid=" + sent.mid() + " dup=" + sent.dup());
            out.flush();
        }
        return 0;
    }
}
