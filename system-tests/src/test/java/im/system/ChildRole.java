package im.system;

import im.infra.config.ChildJvm;
import im.infra.config.Settings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Runs a role's main class in its own JVM (this test JVM's class path) so a test can kill -9 it. */
final class ChildRole {
    private ChildRole() {}

    /** Starts the role and returns once it printed a line starting with {@code readyLine}. */
    static Process start(Settings settings, Class<?> main, String readyLine) throws Exception {
        Process proc = ChildJvm.onThisClassPath(settings.explicitValues(), List.of("-Xmx384m"), main.getName()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.startsWith(readyLine)) {
            // start-up logging
        }
        if (line == null) throw new AssertionError(main.getSimpleName() + " exited before it printed " + readyLine);
        Thread drain = new Thread(() -> {
            try {
                while (out.readLine() != null) {
                    // keep the pipe empty
                }
            } catch (java.io.IOException ignored) {
                // the process ended
            }
        }, "drain-" + main.getSimpleName());
        drain.setDaemon(true);
        drain.start();
        return proc;
    }
}
