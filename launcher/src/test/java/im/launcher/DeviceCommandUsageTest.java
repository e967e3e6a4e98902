package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The device commands (send, tail) refuse bad options with a usage error before connecting. */
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
}
