package im.launcher.cli;

import im.protocol.Edit;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code im edit}: replaces the text of one of the device's user's messages. The edit is an event
 * of its own at a new seq (the message keeps its seq); it is printed with that seq once committed.
 */
@Command(name = "edit", mixinStandardHelpOptions = true,
        description = "Edit one of your messages as a device: send its new text and print the seq of the edit.")
public final class EditCommand implements Callable<Integer> {
    @Mixin
    ChangeOptions change;

    @Parameters(index = "2", paramLabel = "TEXT", description = "The new text (1 to 16384 UTF-8 bytes).")
    String text;

    @Override
    public Integer call() {
        return change.run("edit", "edited", "; dup: stored before with this cmid",
                ids -> new Edit(ids.rid(), change.conv, ids.cmid(), change.seq, text));
    }
}
