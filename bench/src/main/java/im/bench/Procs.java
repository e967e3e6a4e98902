package im.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Reading other processes from {@code /proc}: CPU ticks, parents, command lines, environments. */
final class Procs {
    private Procs() {
    }

    /** utime + stime in clock ticks from a /proc stat file; -1 if it is gone. */
    static long ticks(Path stat) {
        try {
            String[] f = statFields(Files.readString(stat));
            return Long.parseLong(f[11]) + Long.parseLong(f[12]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The fields after "pid (comm) ": f[0] is the state, f[1] the parent pid, f[11]/f[12] utime/stime. */
    static String[] statFields(String stat) {
        return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    }

    /** One thread of a process: its name as Linux shows it (15 characters at most) and its utime + stime in clock ticks. */
    record Task(String comm, long ticks) {
    }

    /**
     * The threads of process {@code pid} ("self" for this one) from {@code /proc/<pid>/task}:
     * thread id → {@link Task}; threads that end while read are left out. Empty if the process is gone.
     */
    static Map<Long, Task> tasks(String pid) {
        Map<Long, Task> m = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
            for (Path t : tasks) {
                try {
                    String comm = Files.readString(t.resolve("comm")).trim();
                    long ticks = ticks(t.resolve("stat"));
                    if (ticks >= 0) m.put(Long.parseLong(t.getFileName().toString()), new Task(comm, ticks));
                } catch (IOException | RuntimeException gone) {
                    // the thread ended while we read it
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
        return m;
    }

    /**
     * The JIT compiler threads of a JVM: thread id → ticks. Keyed per thread so that a window
     * counts only what each thread did inside it (the JVM starts and ends compiler threads as the
     * queue grows and shrinks).
     */
    static Map<Long, Long> jitThreadTicks(long pid) {
        Map<Long, Long> m = new HashMap<>();
        tasks(Long.toString(pid)).forEach((tid, t) -> {
            if (isJitThread(t.comm())) m.put(tid, t.ticks());
        });
        return m;
    }

    /** A HotSpot JIT compiler thread's name as Linux shows it (truncated to 15 characters). */
    static boolean isJitThread(String comm) {
        return comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler");
    }

    /** pid → parent pid of every process. */
    static Map<Long, Long> parents() {
        Map<Long, Long> m = new HashMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc"), q -> q.getFileName().toString().matches("\\d+"))) {
            for (Path q : ds) {
                try {
                    m.put(Long.parseLong(q.getFileName().toString()), Long.parseLong(statFields(Files.readString(q.resolve("stat")))[1]));
                } catch (IOException | RuntimeException gone) {
                    // ended while we read it
                }
            }
        } catch (IOException e) {
            // no /proc
        }
        return m;
    }

    /** The command line with spaces between the arguments, or "?" if the process is gone. */
    static String cmdline(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline")), StandardCharsets.UTF_8).replace('\0', ' ').trim();
        } catch (IOException e) {
            return "?";
        }
    }

    /** One variable of a process's environment as it started, or null. */
    static String environ(long pid, String key) {
        try {
            String env = new String(Files.readAllBytes(Path.of("/proc/" + pid + "/environ")), StandardCharsets.UTF_8);
            for (String kv : env.split("\0")) if (kv.startsWith(key + "=")) return kv.substring(key.length() + 1);
        } catch (IOException e) {
            // gone, or not ours
        }
        return null;
    }

    /** Clock ticks per second of the utime/stime fields (getconf CLK_TCK; 100 if that fails). */
    static long clockTick() {
        try {
            Process pr = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(pr.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return pr.waitFor() == 0 ? Long.parseLong(out) : 100;
        } catch (IOException | RuntimeException e) {
            return 100;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 100;
        }
    }

    /** This process's soft limit of open files (sockets count), or -1 if unknown. */
    static long openFileLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max open files")) return Long.parseLong(line.substring(26).trim().split("\\s+")[0]);
            }
        } catch (IOException | RuntimeException e) {
            // unknown
        }
        return -1;
    }
}
