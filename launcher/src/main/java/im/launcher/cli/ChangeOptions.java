package im.launcher.cli;

import im.protocol.ClientFrame;
import im.protocol.Sent;
import java.io.PrintWriter;
import java.util.UUID;
import java.util.function.Function;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What {@code im edit} and {@code im recall} share: the device, the message (CONV SEQ), the
 * request's cmid and {@code --json}, and sending the change and printing its {@code sent}.
 */
public final class ChangeOptions {
    @Mixin
    DeviceLogin login;

    @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Parameters(index = "1", paramLabel = "SEQ", description = "The seq of the message (one this user sent).")
    long seq;

    @Option(names = "--cmid", paramLabel = "CMID",
            description = "Client id of this change (idempotency key; default: a new UUID). Resend with the same cmid after a timeout: the reply then says dup=true.")
    String cmid;

    @Option(names = "--json", description = "Print the server's sent frame as JSON instead of text.")
    boolean json;

    /**
     * Connects as the device, sends the change {@code frame} builds from (rid, cmid), and prints
     * {@code "<done> CONV SEQ (<what> at seq N)"}, with {@code dupNote} when the server answers dup.
     */
    int run(String what, String done, String dupNote, Function<Ids, ClientFrame> frame) {
        if (seq < 1) throw login.gateway.usage("SEQ: must be at least 1, got " + seq);
        PrintWriter err = login.gateway.err();
        String id = cmid != null ? cmid : UUID.randomUUID().toString();
        try (DeviceSocket s = login.connect(err)) {
            err.println("authenticated as " + s.authed().user() + " / " + s.authed().device() + "; " + what + " of " + conv + " " + seq
                    + ", cmid " + id);
            err.flush();
            Sent sent = s.commit(frame.apply(new Ids(s.nextRid(), id)), id, what);
            PrintWriter out = login.gateway.out();
            out.println(json ? DeviceSocket.json(sent)
                    : done + " " + sent.conv() + " " + seq + " (" + what + " at seq " + sent.seq() + ")" + (sent.dup() ? dupNote : ""));
            out.flush();
        }
        return 0;
    }

    /** The request id and the cmid of one change request. */
    record Ids(String rid, String cmid) {}
}
