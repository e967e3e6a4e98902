package im.relay;

import im.infra.config.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A relay ({@link RelayMain}) in a child JVM, for tests that kill, freeze or resume it: started
 * with exactly the given IM_* settings, ready once it printed {@code IM_READY relay}; its meters
 * are read from its ops server. Its output is echoed with a name prefix so a failure can be read.
 */
final class RelayProcess implements AutoCloseable {
    private static final Pattern OPS = Pattern.compile("ops=(\\S+)");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    final String name;
    final Process process;
    final String opsUrl;

    private RelayProcess(String name, Process process, String opsUrl) {
        this.name = name;
        this.process = process;
        this.opsUrl = opsUrl;
    }

    static RelayProcess start(String name, Map<String, String> env) throws IOException {
        Process p = ChildJvm.onThisClassPath(env, List.of("-Xmx384m"), RelayMain.class.getName()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.startsWith("IM_READY relay")) {
            System.out.println("[" + name + "] " + line);
        }
        if (line == null) throw new AssertionError(name + ": relay process exited before it was ready");
        Matcher m = OPS.matcher(line);
        if (!m.find()) throw new AssertionError(name + ": no ops url in " + line);
        Thread drain = new Thread(() -> {
            try {
                String l;
                while ((l = out.readLine()) != null) System.out.println("[" + name + "] " + l);
            } catch (IOException ignored) {
                // the process ended
            }
        }, "drain-" + name);
        drain.setDaemon(true);
        drain.start();
        return new RelayProcess(name, p, m.group(1));
    }

    long pid() {
        return process.pid();
    }

    /** {@code kill -<signal> pid}: STOP freezes the whole JVM (every thread), CONT resumes it. */
    void signal(String signal) {
        try {
            Process k = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).inheritIO().start();
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                throw new AssertionError("kill -" + signal + " " + pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** True when {@code /readyz} answers 200: active, or a standby that reached PostgreSQL. */
    boolean ready() {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(opsUrl + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** The value of a meter in the relay's Prometheus text, e.g. {@code im_relay_active}; -1 if unreadable. */
    double meter(String name) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(opsUrl + "/metrics"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            for (String l : r.body().split("\n")) {
                if (l.startsWith(name + "{") || l.startsWith(name + " ")) {
                    return Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
                }
            }
            throw new AssertionError(this.name + ": no meter " + name + " in /metrics");
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** SIGKILL (after a SIGCONT, harmless if it runs), and wait for the exit. */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                signal("CONT");
            } catch (AssertionError ended) {
                // it exited meanwhile: nothing to resume
            }
            process.destroyForcibly();
        }
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
