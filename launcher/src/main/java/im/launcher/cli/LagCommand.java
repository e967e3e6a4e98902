package im.launcher.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code im lag}: per device, how far its delivered cursor is behind what it can see, from the
 * admin API's {@code GET /admin/conversations/{conv}/cursors}. HEAD is the last seq the device's
 * user can see: the conversation head, or for a former member (marked {@code (left)}) the seq of
 * their leave. With {@code --top N}, one request ({@code GET /admin/lag?top=N}) lists the N devices
 * furthest behind over every conversation, with how long ago the first event they miss was committed.
 */
@Command(name = "lag", mixinStandardHelpOptions = true,
        description = "Show each device's delivered cursor against the head it can see (conv, user, device, delivered, head, lag).")
public final class LagCommand implements Callable<Integer> {
    /** Conversations fetched per listing page when no --conv is given. */
    private static final int PAGE = 1000;

    @Mixin
    AdminOptions admin;

    @Spec
    CommandSpec spec;

    @Option(names = "--conv", paramLabel = "CONV", description = "Only this conversation (default: every conversation).")
    String conv;

    @Option(names = "--lagging", description = "Only devices with lag > 0.")
    boolean laggingOnly;

    @Option(names = "--top", paramLabel = "N",
            description = "The N devices furthest behind over every conversation, in one request (1-1000; implies --lagging; not with --conv).")
    Integer top;

    @Override
    public Integer call() {
        AdminClient client = admin.client();
        if (top != null) return top(client);
        List<String> convs = new ArrayList<>();
        if (conv != null) {
            convs.add(conv);
        } else {
            String after = null;
            do {
                JsonNode page = client.get("/admin/conversations?limit=" + PAGE + (after == null ? "" : "&after=" + AdminClient.segment(after)));
                for (JsonNode c : page.get("conversations")) convs.add(c.get("conv").asText());
                after = page.hasNonNull("next") ? page.get("next").asText() : null;
            } while (after != null);
        }
        PrintWriter out = spec.commandLine().getOut();
        Table t = new Table("CONV", "USER", "DEVICE", "DELIVERED", "HEAD", "LAG");
        for (String c : convs) {
            JsonNode r = client.get("/admin/conversations/" + AdminClient.segment(c) + "/cursors");
            if (admin.json) {
                out.println(r.toString());
                continue;
            }
            for (JsonNode d : r.get("devices")) {
                if (laggingOnly && d.get("lag").asLong() == 0) continue;
                t.row(c, d.get("user").asText() + (d.get("member").asBoolean() ? "" : " (left)"), d.get("device").asText(),
                        d.get("delivered").asLong(), d.get("visibleHead").asLong(), d.get("lag").asLong());
            }
        }
        if (admin.json) {
            out.flush();
        } else if (t.isEmpty()) {
            spec.commandLine().getErr().println(convs.isEmpty() ? "no conversations" : laggingOnly ? "no device is lagging" : "no devices");
            spec.commandLine().getErr().flush();
        } else {
            t.print(out);
        }
        return 0;
    }

    private int top(AdminClient client) {
        if (conv != null) throw new ParameterException(spec.commandLine(), "--top lists every conversation: use it without --conv");
        if (top < 1 || top > 1000) throw new ParameterException(spec.commandLine(), "--top: must be from 1 to 1000, got " + top);
        JsonNode r = client.get("/admin/lag?top=" + top);
        PrintWriter out = spec.commandLine().getOut();
        if (admin.json) {
            out.println(r.toString());
            out.flush();
            return 0;
        }
        Table t = new Table("CONV", "USER", "DEVICE", "DELIVERED", "HEAD", "LAG", "BEHIND");
        for (JsonNode d : r.get("devices")) {
            t.row(d.get("conv").asText(), d.get("user").asText() + (d.get("member").asBoolean() ? "" : " (left)"), d.get("device").asText(),
                    d.get("delivered").asLong(), d.get("visibleHead").asLong(), d.get("lag").asLong(), age(d.get("behindMs").asLong()));
        }
        if (t.isEmpty()) {
            spec.commandLine().getErr().println("no device is lagging");
            spec.commandLine().getErr().flush();
        } else {
            t.print(out);
        }
        return 0;
    }

    /** A duration for people: 850ms, 12s, 7m, 3h, 2d. */
    static String age(long ms) {
        if (ms < 1000) return ms + "ms";
        long s = ms / 1000;
        if (s < 120) return s + "s";
        if (s < 7200) return s / 60 + "m";
        if (s < 172800) return s / 3600 + "h";
        return s / 86400 + "d";
    }
}
