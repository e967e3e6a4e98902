package im.launcher.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** What `im tail` and `im events tail` print of a body: one line, nothing that drives the terminal. */
class TailCommandTest {
    @Test
    void controlAndFormatCharactersArePrintedAsEscapes() {
        assertEquals("a\\u001b[2Jb", TailCommand.oneLine("a\u001b[2Jb"), "ESC (clear the screen)");
        assertEquals("\\u202egnp.exe", TailCommand.oneLine("\u202egnp.exe"), "right-to-left override");
        assertEquals("x\\u200by\\u0085z\\u007f", TailCommand.oneLine("x\u200by\u0085z\u007f"), "zero-width space, C1 NEL, DEL");
        assertEquals("line\\nnext\\ttab\\\\", TailCommand.oneLine("line\nnext\ttab\\"));
        assertEquals("héllo 你好 🎉", TailCommand.oneLine("héllo 你好 🎉"), "text stays text");
    }

    @Test
    void aBulkJoinIsOneLineWithItsCountNotItsList() {
        im.protocol.Event bulk = new im.protocol.Event("g", 1, "join", "m", "u-ana", null, "", 0, 5_000);
        assertEquals("* joined with 4999 others", TailCommand.text(bulk));
        assertEquals("* joined", TailCommand.text(new im.protocol.Event("g", 2, "join", "m2", "u-bo", null, "", 0)));
        assertEquals("* left", TailCommand.text(new im.protocol.Event("g", 3, "leave", "m3", "u-bo", null, "", 0)));
    }

    @Test
    void editsAndRecallsNameTheMessageTheyChangeAndATombstoneSaysRecalled() {
        im.protocol.Event edit = new im.protocol.Event("c", 9, "edit", "m9", "u-ana", "c9", "new\ntext", 0, 0, 7, false);
        assertEquals("* edited #7: new\\ntext", TailCommand.text(edit));
        assertEquals("* edited #7 (recalled)", TailCommand.text(new im.protocol.Event("c", 9, "edit", "m9", "u-ana", "c9", "", 0, 0, 7, true)));
        assertEquals("* recalled #7", TailCommand.text(new im.protocol.Event("c", 10, "recall", "m10", "u-ana", "c10", "", 0, 0, 7, false)));
        assertEquals("(recalled)", TailCommand.text(new im.protocol.Event("c", 7, "msg", "m7", "u-ana", "c7", "", 0, 0, 0, true)));
    }
}
