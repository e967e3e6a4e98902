package im.launcher.cli;

import im.protocol.Limits;
import im.protocol.Receipt;
import im.protocol.Receipts;
import im.protocol.ReceiptsReply;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code im receipts}: how far some of the device's user's own messages have got: per message, how
 * many of the other members who may see it have read it, and how many of their devices stored it.
 * The counts are derived from the cursors when the server answers; ask again to refresh.
 */
@Command(name = "receipts", mixinStandardHelpOptions = true,
        description = "Show how many members read, and how many of their devices stored, some of your messages.")
public final class ReceiptsCommand implements Callable<Integer> {
    @Mixin
    DeviceLogin login;

    @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "SEQ",
            description = "Seqs of messages this user sent (1 to 100, distinct).")
    List<Long> seqs;

    @Option(names = "--json", description = "Print the server's receipts frame as JSON instead of the table.")
    boolean json;

    @Override
    public Integer call() {
        if (seqs.size() > Limits.RECEIPTS_MAX_SEQS) {
            throw login.gateway.usage("SEQ: at most " + Limits.RECEIPTS_MAX_SEQS + " seqs, got " + seqs.size());
        }
        if (seqs.stream().distinct().count() < seqs.size()) throw login.gateway.usage("SEQ: each seq at most once");
        PrintWriter err = login.gateway.err();
        ReceiptsReply reply;
        try (DeviceSocket s = login.connect(err)) {
            err.println("authenticated as " + s.authed().user() + " / " + s.authed().device() + "; receipts of " + seqs.size()
                    + " messages in " + conv);
            err.flush();
            reply = (ReceiptsReply) s.request(new Receipts(s.nextRid(), conv, seqs));
        }
        PrintWriter out = login.gateway.out();
        if (json) {
            out.println(DeviceSocket.json(reply));
        } else {
            Table t = new Table("SEQ", "READ/MEMBERS", "DELIVERED/DEVICES");
            for (Receipt r : reply.receipts()) t.row(r.seq(), r.read() + "/" + r.members(), r.delivered() + "/" + r.devices());
            t.print(out);
        }
        out.flush();
        return 0;
    }
}
