package im.launcher.cli;

import im.protocol.ConvState;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code im unread}: subscribes as a device, paging through every conversation of its user, and
 * prints each one's read state from {@code subbed} (read cursor, unread count, head) with the total.
 * The counts are those at subscription time; {@code im tail} follows their changes.
 */
@Command(name = "unread", mixinStandardHelpOptions = true,
        description = "List a device's conversations with the user's read cursor, unread count and head, and the total unread.")
public final class UnreadCommand implements Callable<Integer> {
    @Mixin
    DeviceLogin login;

    @Option(names = "--json", description = "Print each conversation's subbed entry as JSON, one a line, instead of the table.")
    boolean json;

    @Override
    public Integer call() {
        PrintWriter err = login.gateway.err();
        List<ConvState> convs = new ArrayList<>();
        try (DeviceSocket s = login.connect(err)) {
            s.subscribe(c -> !convs.add(c));   // every page
            err.println("subscribed as " + s.authed().user() + " / " + s.authed().device() + ": " + convs.size() + " conversations");
            err.flush();
        }
        PrintWriter out = login.gateway.out();
        if (json) {
            for (ConvState c : convs) out.println(AdminClient.json(c));
            out.flush();
            return 0;
        }
        Table t = new Table("CONV", "READ", "UNREAD", "HEAD");
        long total = 0;
        for (ConvState c : convs) {
            t.row(c.conv(), c.read(), c.unread(), c.head());
            total += c.unread();
        }
        if (!t.isEmpty()) t.print(out);
        out.println("total " + total + " unread in " + convs.size() + " conversations");
        out.flush();
        return 0;
    }
}
