package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The README's run command, end to end: every role starts on embedded services and stops cleanly. */
class PlatformCommandIT {
    @Test
    void platformStartsEveryRoleWithTheDemoAndStops(@TempDir Path dir) {
        System.setProperty("IM_PG_DATA_DIR", dir.resolve("pg").toString());
        System.setProperty("IM_KAFKA_DATA_DIR", dir.resolve("kafka").toString());
        System.setProperty("IM_PG_PORT", "0");
        System.setProperty("IM_KAFKA_PORT", "0");
        System.setProperty("IM_GATEWAY_PORT", "0");
        System.setProperty("IM_OPS_PORT", "0");
        System.setProperty("IM_ADMIN_PORT", "0");
        PrintStream original = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int rc;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            rc = new CommandLine(new PlatformCommand()).execute("--demo", "--exit-after-start");
        } finally {
            System.setOut(original);
            for (String k : new String[] {"IM_PG_DATA_DIR", "IM_KAFKA_DATA_DIR", "IM_PG_PORT", "IM_KAFKA_PORT", "IM_GATEWAY_PORT", "IM_OPS_PORT", "IM_ADMIN_PORT"}) {
                System.clearProperty(k);
            }
        }
        String text = out.toString(StandardCharsets.UTF_8);
        original.println(text);
        assertEquals(0, rc);
        assertTrue(text.contains("IM platform is running."), text);
        assertTrue(text.contains("CDC relay") && text.contains("delivery node") && text.contains("sweeper"), text);
        assertTrue(text.contains("u-ana / d-ana token: imt_"), text);
        assertTrue(text.matches("(?s).*Web client: +http://127\\.0\\.0\\.1:\\d+/ .*"), text);
        assertTrue(text.matches("(?s).*as u-bo: +http://127\\.0\\.0\\.1:\\d+/#token=imt_.*"), text);
        assertTrue(text.contains("IM_READY platform port="), text);
        assertTrue(text.matches("(?s).*Ops: +http://127\\.0\\.0\\.1:\\d+/healthz.*"), text);
        assertTrue(text.matches("(?s).*Admin API: +http://127\\.0\\.0\\.1:\\d+/admin .*"), text);
    }

    @Test
    void instanceCountsNeedProcessesAndAreBounded() {
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cl = new CommandLine(new PlatformCommand()).setErr(new java.io.PrintWriter(err));
        assertEquals(2, cl.execute("--gateways", "3"));
        assertTrue(err.toString().contains("--gateways, --delivery-nodes and --relays need --processes"), err.toString());
        assertEquals(2, new CommandLine(new PlatformCommand()).setErr(new java.io.PrintWriter(err)).execute("--processes", "--relays", "0"));
        assertTrue(err.toString().contains("1 to 16"), err.toString());
    }
}
