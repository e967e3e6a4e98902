package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The device commands (send, edit, recall, receipts, tail) refuse bad options with a usage error before connecting. */
class DeviceCommandUsageTest {
    private static String run(int expectedExit, String... args) {
        CommandLine root = Im.commandLine();
        StringWriter err = new StringWriter();
        root.setOut(new PrintWriter(new StringWriter()));
        root.setErr(new PrintWriter(err));
        assertEquals(expectedExit, root.execute(args), String.join(" ", args) + ":\n" + err);
        return err.toString();
    }

    @Test
    void tailRefusesANegativeFrom() {
        String err = run(2, "tail", "--token", "t", "--conv", "c", "--from", "-1");
        assertTrue(err.contains("--from: must be 0 or more"), err);
        assertTrue(err.contains("Usage: im tail"), err);
    }

    @Test
    void sendRefusesAGatewayThatIsNotAUrlOfAServer() {
        String err = run(2, "send", "--gateway", "ftp://x", "--token", "t", "--conv", "c", "hi");
        assertTrue(err.contains("--gateway: expected http://host:port or https://host:port, got ftp://x"), err);
        assertTrue(err.contains("Usage: im send"), err);
    }

    @Test
    void aCaFileThatCannotBeReadIsAUsageErrorNamingIt() {
        String err = run(2, "send", "--gateway", "https://127.0.0.1:9", "--ca-file", "/no/such/ca.pem", "--token", "t", "--conv", "c", "hi");
        assertTrue(err.contains("--ca-file /no/such/ca.pem: cannot read it"), err);
        assertTrue(err.contains("Usage: im send"), err);
    }

    @Test
    void aCaFileForAPlainGatewayIsAUsageError() {
        String err = run(2, "tail", "--gateway", "http://127.0.0.1:9", "--ca-file", "ca.pem", "--token", "t", "--conv", "c");
        assertTrue(err.contains("--ca-file: only for an https:// or wss:// URL"), err);
    }

    @Test
    void aWssGatewayUrlIsTakenAsTheGatewaysAddress() {
        String err = run(1, "send", "--gateway", "wss://127.0.0.1:9/ws", "--timeout", "2", "--token", "t", "--conv", "c", "hi");
        assertTrue(err.contains("connecting to wss://127.0.0.1:9/ws"), err);   // then: nothing listens on port 9
    }

    @Test
    void bothNeedTokenAndConv() {
        assertTrue(run(2, "send", "hi").contains("Missing required options: '--token=TOKEN', '--conv=CONV'"));
        assertTrue(run(2, "tail").contains("Missing required options: '--token=TOKEN', '--conv=CONV'"));
    }

    @Test
    void editAndRecallNeedASeqOfAMessage() {
        assertTrue(run(2, "edit", "--token", "t", "c", "0", "hi").contains("SEQ: must be at least 1, got 0"));
        assertTrue(run(2, "recall", "--token", "t", "c", "x").contains("Invalid value for positional parameter at index 1 (SEQ): 'x'"));
        assertTrue(run(2, "edit", "--token", "t", "c", "3").contains("Missing required parameter: 'TEXT'"));
    }

    @Test
    void receiptsTakeOneToAHundredDistinctSeqs() {
        String[] many = new String[105];
        many[0] = "receipts";
        many[1] = "--token";
        many[2] = "t";
        many[3] = "c";
        for (int i = 4; i < many.length; i++) many[i] = Integer.toString(i);
        assertTrue(run(2, many).contains("SEQ: at most 100 seqs, got 101"));
        assertTrue(run(2, "receipts", "--token", "t", "c", "3", "3").contains("SEQ: each seq at most once"));
        assertTrue(run(2, "receipts", "--token", "t", "c").contains("Missing required parameter: 'SEQ'"));
    }
}
