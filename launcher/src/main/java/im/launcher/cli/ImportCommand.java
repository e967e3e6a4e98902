package im.launcher.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code im admin import}: users, devices or the members of one conversation from a file (one per
 * line; {@code -} reads stdin), through the bulk admin endpoints in requests of {@code --chunk}
 * lines. Each request is all or nothing; what existed already is reported, not refused, so an
 * import that stopped half way can simply run again (docs/cli.md).
 */
@Command(name = "import", mixinStandardHelpOptions = true,
        description = "Import users, devices or members from a file, many per request (the bulk admin API).",
        subcommands = {ImportCommand.Users.class, ImportCommand.Devices.class, ImportCommand.Members.class})
final class ImportCommand {
    private ImportCommand() {}

    /** What every import shares: the admin options, the file, the chunk size; one request per chunk. */
    abstract static class Import implements Callable<Integer> {
        @Mixin
        AdminOptions admin;

        @Option(names = "--chunk", paramLabel = "N", defaultValue = "10000",
                description = "Lines per request, at most the gateway's IM_ADMIN_BULK_MAX (default: ${DEFAULT-VALUE}).")
        int chunk;

        /**
         * The lines of {@code file} without blanks and {@code #} comments, each split at commas into
         * {@code min}..{@code max} fields ({@code form} in the error): every line is checked before
         * anything is sent.
         */
        List<Line> lines(String file, int min, int max, String form) {
            if (chunk < 1 || chunk > 100_000) throw admin.usage("--chunk: from 1 to 100000");
            List<Line> out = new ArrayList<>();
            try (BufferedReader r = file.equals("-")
                    ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
                    : Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
                String text;
                int n = 0;
                while ((text = r.readLine()) != null) {
                    n++;
                    String t = text.strip();
                    if (!t.isEmpty() && !t.startsWith("#")) out.add(new Line(n, fields(n, t, min, max, form)));
                }
            } catch (IOException e) {
                throw new CliException("cannot read " + file + ": " + e.getMessage());
            }
            return out;
        }

        /** Sends {@code lines} in chunks: {@code body} builds a request's body, {@code done} takes its reply. */
        void send(List<Line> lines, String path, Function<List<Line>, ObjectNode> body, Consumer<JsonNode> done) {
            AdminClient client = admin.client();
            for (int from = 0; from < lines.size(); from += chunk) {
                List<Line> part = lines.subList(from, Math.min(lines.size(), from + chunk));
                try {
                    done.accept(client.post(path, body.apply(part)));
                } catch (CliException e) {
                    throw new CliException(e.getMessage() + " (lines " + part.get(0).number() + "-" + part.get(part.size() - 1).number()
                            + "; the " + from + " lines before them were imported: run the import again, what exists is kept)");
                }
            }
        }

        private String[] fields(int number, String text, int min, int max, String form) {
            String[] f = text.split(",", -1);
            if (f.length < min || f.length > max) throw admin.usage("line " + number + ": expected " + form + ", got: " + text);
            for (int i = 0; i < f.length; i++) f[i] = f[i].strip();
            return f;
        }
    }

    /** A line of the file: its number (1-based) and its fields. */
    record Line(int number, String[] fields) {}

    @Command(name = "users", mixinStandardHelpOptions = true,
            description = "Create users, one per line: USER[,DISPLAY NAME]. Existing users are reported and left as they are.")
    static final class Users extends Import {
        @Parameters(index = "0", paramLabel = "FILE", description = "The file (- for stdin).")
        String file;

        @Override
        public Integer call() {
            int[] created = {0};
            List<String> existing = new ArrayList<>();
            send(lines(file, 1, 2, "USER[,DISPLAY NAME]"), "/admin/users/bulk", part -> {
                ObjectNode b = AdminClient.JSON.createObjectNode();
                ArrayNode us = b.putArray("users");
                for (Line l : part) {
                    ObjectNode u = us.addObject().put("user", l.fields()[0]);
                    if (l.fields().length == 2) u.put("name", l.fields()[1]);
                }
                return b;
            }, r -> {
                created[0] += r.get("created").asInt();
                r.get("existing").forEach(e -> existing.add(e.asText()));
            });
            admin.out().println("created " + created[0] + " users" + (existing.isEmpty() ? "" : ", " + existing.size() + " existed already"));
            admin.out().flush();
            return 0;
        }
    }

    @Command(name = "devices", mixinStandardHelpOptions = true,
            description = "Register devices, one per line: USER,DEVICE. Prints DEVICE TOKEN for each new device (keep them:"
                    + " they are shown once); existing devices are reported on stderr, not registered again.")
    static final class Devices extends Import {
        @Parameters(index = "0", paramLabel = "FILE", description = "The file (- for stdin).")
        String file;

        @Override
        public Integer call() {
            List<String> existing = new ArrayList<>();
            int[] registered = {0};
            send(lines(file, 2, 2, "USER,DEVICE"), "/admin/devices/bulk", part -> {
                ObjectNode b = AdminClient.JSON.createObjectNode();
                ArrayNode ds = b.putArray("devices");
                for (Line l : part) ds.addObject().put("user", l.fields()[0]).put("device", l.fields()[1]);
                return b;
            }, r -> {
                for (JsonNode d : r.get("devices")) {
                    admin.out().println(d.get("device").asText() + " " + d.get("token").asText());
                    registered[0]++;
                }
                r.get("existing").forEach(e -> existing.add(e.asText()));
            });
            admin.out().flush();
            admin.err().println("registered " + registered[0] + " devices" + (existing.isEmpty() ? ""
                    : "; " + existing.size() + " existed already (not shown: renew their tokens with `im admin device renew`)"));
            admin.err().flush();
            return 0;
        }
    }

    @Command(name = "members", mixinStandardHelpOptions = true,
            description = "Add members to a conversation, one user per line: one join event per request (per 5,000 users of a request), in the order of the file."
                    + " Current members are reported, not added again.")
    static final class Members extends Import {
        @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
        String conv;

        @Parameters(index = "1", paramLabel = "FILE", description = "The file (- for stdin).")
        String file;

        @Override
        public Integer call() {
            int[] added = {0};
            int[] already = {0};
            long[] head = {0};
            send(lines(file, 1, 1, "USER"), "/admin/conversations/" + AdminClient.segment(conv) + "/members", part -> {
                ObjectNode b = AdminClient.JSON.createObjectNode();
                ArrayNode us = b.putArray("users");
                for (Line l : part) us.add(l.fields()[0]);
                return b;
            }, r -> {
                added[0] += r.get("added").asInt();
                already[0] += r.get("already").size();
                head[0] = r.get("head").asLong();
            });
            admin.out().println("added " + added[0] + " members to " + conv + (already[0] == 0 ? "" : ", " + already[0] + " were members already")
                    + "; head " + head[0]);
            admin.out().flush();
            return 0;
        }
    }
}
