package im.launcher.cli;

import im.protocol.ConvState;
import im.protocol.Typing;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code im typing}: tells the other members' online devices once that the device's user is typing
 * in a conversation. Nothing answers a typing that was taken, so the command waits briefly for a
 * refusal ({@link #REFUSAL_WAIT}) and otherwise exits 0: taken, or dropped by the throttle.
 */
@Command(name = "typing", mixinStandardHelpOptions = true,
        description = "Say once, as a device, that its user is typing in a conversation (the other members' devices show it).")
public final class TypingCommand implements Callable<Integer> {
    /** How long to wait for an error before taking the silence as "taken". */
    static final Duration REFUSAL_WAIT = Duration.ofMillis(500);

    @Mixin
    DeviceLogin login;

    @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Override
    public Integer call() {
        PrintWriter err = login.gateway.err();
        try (DeviceSocket s = login.connect(err)) {
            // the gateway passes typing on only for conversations the connection knows from its sub
            ConvState c = s.subscribe(listed -> listed.conv().equals(conv));
            err.println("subscribed as " + s.authed().user() + " / " + s.authed().device() + (c == null ? "; " + conv + " is not listed" : ""));
            err.flush();
            s.post(new Typing(s.nextRid(), conv), REFUSAL_WAIT);
        }
        PrintWriter out = login.gateway.out();
        out.println("typing in " + conv);
        out.flush();
        return 0;
    }
}
