package im.launcher.cli;

import im.protocol.Recall;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code im recall}: takes back one of the device's user's messages. The recall is an event of its
 * own at a new seq; from its commit on the message (and its edits) reads as an empty tombstone.
 * Recalling a message already recalled is answered with the first recall.
 */
@Command(name = "recall", mixinStandardHelpOptions = true,
        description = "Recall one of your messages as a device and print the seq of the recall.")
public final class RecallCommand implements Callable<Integer> {
    @Mixin
    ChangeOptions change;

    @Override
    public Integer call() {
        return change.run("recall", "recalled", ": it was already recalled",
                ids -> new Recall(ids.rid(), change.conv, ids.cmid(), change.seq));
    }
}
