package im.launcher.cli;

import im.protocol.ConvState;
import im.protocol.Read;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code im read}: moves the device's user's read cursor of one conversation up to a seq (default:
 * the head {@code subbed} reports for it, i.e. "mark all read") and prints the read state the server
 * answers. The cursor only moves up, so the state's {@code read} may be above the seq asked for.
 */
@Command(name = "read", mixinStandardHelpOptions = true,
        description = "Mark a conversation read up to SEQ (default: its head) as a device's user and print the read state: read cursor, unread count, head.")
public final class ReadCommand implements Callable<Integer> {
    @Mixin
    DeviceLogin login;

    @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Parameters(index = "1", arity = "0..1", paramLabel = "SEQ",
            description = "Read every event up to this seq (default: the conversation's head as the server reports it: all of it).")
    Long seq;

    @Option(names = "--json", description = "Print the server's readack frame as JSON instead of text.")
    boolean json;

    @Override
    public Integer call() {
        PrintWriter err = login.gateway.err();
        if (seq != null && seq < 0) throw login.gateway.usage("SEQ: must be 0 or more, got " + seq);
        try (DeviceSocket s = login.connect(err)) {
            long upTo = seq != null ? seq : head(s);
            err.println("authenticated as " + s.authed().user() + " / " + s.authed().device() + "; reading " + conv + " up to seq " + upTo);
            err.flush();
            ReadAck ack = read(s, upTo);
            ReadState r = ack.state();
            PrintWriter out = login.gateway.out();
            out.println(json ? DeviceSocket.json(ack) : "read " + r.read() + " in " + ack.conv() + ": " + r.unread() + " unread (head " + r.head() + ")");
            out.flush();
        }
        return 0;
    }

    /**
     * The head of {@code conv} this user may see, from {@code subbed}. A conversation not listed there
     * (not the user's, or one they left and this device acked the leave of) gets a read of seq 0,
     * which moves nothing: the server refuses it ({@code NOT_MEMBER}) or answers the head.
     */
    private long head(DeviceSocket s) {
        ConvState c = s.subscribe(listed -> listed.conv().equals(conv));
        return c != null ? c.head() : read(s, 0).state().head();
    }

    private ReadAck read(DeviceSocket s, long upTo) {
        return (ReadAck) s.request(new Read(s.nextRid(), conv, upTo));
    }
}
