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
import java.util.stream.Stream;

/** What every benchmark prints about its machine and server, and its clean-up. */
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
}
