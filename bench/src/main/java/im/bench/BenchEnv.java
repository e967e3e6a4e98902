package im.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import picocli.CommandLine;

/** What every benchmark prints about its machine and server, how it runs as a main, and its clean-up. */
final class BenchEnv {
    private BenchEnv() {}

    /** /proc/loadavg as it reads (other work on the machine shows up here), or "n/a". */
    static String loadAvg() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "n/a";
        }
    }

    /** The 1-minute load average. */
    static String load1() {
        String s = loadAvg();
        int sp = s.indexOf(' ');
        return sp < 0 ? s : s.substring(0, sp);
    }

    /** One line {@code # postgresql: name=value ...} with the server's settings of the given names. */
    static void printServer(Connection c, List<String> settings) throws SQLException {
        StringBuilder b = new StringBuilder("# postgresql:");
        try (Statement st = c.createStatement()) {
            for (String name : settings) {
                try (ResultSet rs = st.executeQuery("SHOW " + name)) {
                    rs.next();
                    b.append(' ').append(name).append('=').append(rs.getString(1));
                }
            }
        }
        System.out.println(b);
    }

    /** Deletes a directory tree (the benchmark's temporary data), reporting what it could not. */
    static void deleteTree(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("# could not delete " + root + ": " + e);
        }
    }

    /**
     * Runs a picocli bench command as the process's main: logs through bench-logback.xml unless a
     * configuration is given, calls {@code release} (what the bench started: a platform, sockets) on
     * the way out and on Ctrl-C, exits with the command's code.
     */
    static void runMain(Object command, Runnable release, String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "bench-logback.xml");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(release, "bench-shutdown"));
        int rc = new CommandLine(command).execute(args);
        release.run();
        System.exit(rc);
    }

    /** Daemon threads named prefix1, prefix2, ... with small stacks (a bench may start thousands of clients). */
    static ThreadFactory daemon(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(null, r, prefix + n.incrementAndGet(), 256 * 1024);
            t.setDaemon(true);
            return t;
        };
    }
}
