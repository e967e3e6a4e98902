package im.launcher.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code im admin}: users, devices, conversations and membership of a running platform, through
 * the gateway's admin API. Not a role: it connects, does one request (or a few), and exits.
 */
@Command(name = "admin", mixinStandardHelpOptions = true,
        description = "Manage users, devices, conversations and membership of a running platform (admin API).",
        subcommands = {AdminCommand.User.class, AdminCommand.Device.class, AdminCommand.Conv.class, AdminCommand.Member.class,
                AdminCommand.Message.class, ImportCommand.class})
public final class AdminCommand {

    /**
     * What every admin leaf command shares: the admin options (which say where to print), and one
     * request whose reply is printed as text, or as it is with --json.
     */
    abstract static class Leaf implements Callable<Integer> {
        @Mixin
        AdminOptions admin;

        /** The command's one request to the admin API. */
        abstract JsonNode request(AdminClient client);

        /** Prints the reply as text (not called with --json). */
        abstract void print(JsonNode reply);

        @Override
        public Integer call() {
            JsonNode r = request(admin.client());
            if (!printedJson(r)) print(r);
            return 0;
        }

        PrintWriter out() {
            return admin.out();
        }

        /** With --json prints the reply and returns true; the caller then prints nothing else. */
        boolean printedJson(JsonNode reply) {
            if (!admin.json) return false;
            out().println(reply.toString());
            out().flush();
            return true;
        }

        static String time(JsonNode millis) {
            return millis == null || millis.isNull() ? "-" : Instant.ofEpochMilli(millis.asLong()).toString();
        }

        /** On a listing with more pages: how to get the next one, on stderr so stdout stays a table. */
        void more(JsonNode reply) {
            if (reply.hasNonNull("next")) admin.err().println("more: repeat with --after " + reply.get("next").asText());
            admin.err().flush();
        }
    }

    /** Paging options of the list commands. */
    static final class Paging {
        @Option(names = "--limit", paramLabel = "N", defaultValue = "100", description = "At most N rows (1-1000; default: ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--after", paramLabel = "ID", description = "Start after this id (the `more:` line of the previous page names it).")
        String after;

        String query() {
            return "?limit=" + limit + (after == null ? "" : "&after=" + AdminClient.segment(after));
        }
    }

    /** A list command: one page of a collection, printed as a table (or the JSON), then the `more:` line. */
    abstract static class PagedList extends Leaf {
        private final String path;

        @Mixin
        Paging paging;

        PagedList(String path) {
            this.path = path;
        }

        abstract Table table(JsonNode reply);

        @Override
        JsonNode request(AdminClient client) {
            return client.get(path + paging.query());
        }

        @Override
        void print(JsonNode r) {
            table(r).print(out());
            more(r);
        }
    }

    // ------------------------------------------------------------------ users

    @Command(name = "user", aliases = "users", mixinStandardHelpOptions = true, description = "Create and list users.",
            subcommands = {UserCreate.class, UserList.class})
    static final class User {
    }

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a user.")
    static final class UserCreate extends Leaf {
        @Parameters(index = "0", paramLabel = "USER", description = "User id, [A-Za-z0-9._:-]{1,64}, e.g. u-ana.")
        String user;

        @Option(names = "--name", paramLabel = "NAME", description = "Display name.")
        String name;

        @Override
        JsonNode request(AdminClient client) {
            ObjectNode body = AdminClient.JSON.createObjectNode().put("user", user);
            if (name != null) body.put("name", name);
            return client.post("/admin/users", body);
        }

        @Override
        void print(JsonNode r) {
            out().println("created user " + r.get("user").asText());
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List users in id order, with their number of devices.")
    static final class UserList extends PagedList {
        UserList() {
            super("/admin/users");
        }

        @Override
        Table table(JsonNode r) {
            Table t = new Table("USER", "NAME", "DEVICES");
            for (JsonNode u : r.get("users")) t.row(u.get("user").asText(), u.get("name").asText(), u.get("devices").asInt());
            return t;
        }
    }

    // ------------------------------------------------------------------ devices

    @Command(name = "device", aliases = "devices", mixinStandardHelpOptions = true,
            description = "Register, reinstall and list devices (register and reinstall print the device's token).",
            subcommands = {DeviceRegister.class, DeviceReinstall.class, DeviceRenew.class, DeviceList.class})
    static final class Device {
    }

    /** Prints the token alone on stdout (so {@code TOKEN=$(im admin device register ...)} works), the rest on stderr. */
    abstract static class TokenLeaf extends Leaf {
        private final String what;

        TokenLeaf(String what) {
            this.what = what;
        }

        @Override
        void print(JsonNode r) {
            admin.err().println(what + " device " + r.get("device").asText() + " of " + r.get("user").asText()
                    + " (install " + r.get("epoch").asInt() + "); its token, shown only now"
                    + (r.hasNonNull("expires") ? ", valid until " + r.get("expires").asText() : "") + ":");
            admin.err().flush();
            out().println(r.get("token").asText());
            out().flush();
        }
    }

    @Command(name = "register", mixinStandardHelpOptions = true,
            description = "Register a new device of a user; prints its token (shown only once).")
    static final class DeviceRegister extends TokenLeaf {
        @Parameters(index = "0", paramLabel = "USER", description = "The device's user.")
        String user;

        @Parameters(index = "1", paramLabel = "DEVICE", description = "Device id, e.g. d-ana-phone.")
        String device;

        DeviceRegister() {
            super("registered");
        }

        @Override
        JsonNode request(AdminClient client) {
            return client.post("/admin/devices", AdminClient.JSON.createObjectNode().put("user", user).put("device", device));
        }
    }

    @Command(name = "reinstall", mixinStandardHelpOptions = true,
            description = "Reinstall a device: next install epoch and a new token; the old token gets STALE_INSTALL and the device's cursors are cleared.")
    static final class DeviceReinstall extends TokenLeaf {
        @Parameters(index = "0", paramLabel = "DEVICE", description = "Device id.")
        String device;

        DeviceReinstall() {
            super("reinstalled");
        }

        @Override
        JsonNode request(AdminClient client) {
            return client.post("/admin/devices/" + AdminClient.segment(device) + "/reinstall", null);
        }
    }

    @Command(name = "renew", mixinStandardHelpOptions = true,
            description = "Renew a device's token (before or after it expired): same install, cursors kept, a new token"
                    + " with a fresh lifetime (IM_TOKEN_TTL_S); the old token gets BAD_TOKEN at once.")
    static final class DeviceRenew extends TokenLeaf {
        @Parameters(index = "0", paramLabel = "DEVICE", description = "Device id.")
        String device;

        DeviceRenew() {
            super("renewed");
        }

        @Override
        JsonNode request(AdminClient client) {
            return client.post("/admin/devices/" + AdminClient.segment(device) + "/token", null);
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List a user's devices with their install epoch and token expiry.")
    static final class DeviceList extends Leaf {
        @Parameters(index = "0", paramLabel = "USER", description = "User id.")
        String user;

        @Override
        JsonNode request(AdminClient client) {
            return client.get("/admin/users/" + AdminClient.segment(user) + "/devices");
        }

        @Override
        void print(JsonNode r) {
            Table t = new Table("DEVICE", "EPOCH", "CREATED", "UPDATED", "TOKEN EXPIRES");
            for (JsonNode d : r.get("devices")) {
                t.row(d.get("device").asText(), d.get("epoch").asInt(), time(d.get("created")), time(d.get("updated")),
                        d.hasNonNull("tokenExpires") ? time(d.get("tokenExpires")) : "never");
            }
            t.print(out());
        }
    }

    // ------------------------------------------------------------------ conversations

    @Command(name = "conv", aliases = {"conversation", "conversations"}, mixinStandardHelpOptions = true,
            description = "Create, show and list conversations.",
            subcommands = {ConvCreate.class, ConvShow.class, ConvList.class})
    static final class Conv {
    }

    abstract static class ConvLeaf extends Leaf {
        @Override
        void print(JsonNode r) {
            out().println(r.get("conv").asText() + "  " + r.get("kind").asText() + "  head " + r.get("head").asLong());
            Table t = new Table("MEMBER", "FROM", "TO");
            for (JsonNode m : r.get("members")) {
                t.row(m.get("user").asText(), m.get("from").asLong(), m.get("to").isNull() ? "-" : m.get("to").asText());
            }
            t.print(out());
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Create a conversation; each member gets a join event (seq 1, 2, ... in the order given).")
    static final class ConvCreate extends ConvLeaf {
        @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id, e.g. c-ab.")
        String conv;

        @Parameters(index = "1..*", arity = "1..*", paramLabel = "MEMBER", description = "User ids of the members.")
        List<String> members;

        @Option(names = "--kind", paramLabel = "KIND", defaultValue = "group",
                description = "direct (exactly two members) or group (default: ${DEFAULT-VALUE}).")
        String kind;

        @Override
        JsonNode request(AdminClient client) {
            ObjectNode body = AdminClient.JSON.createObjectNode().put("conv", conv).put("kind", kind);
            members.forEach(body.putArray("members")::add);
            return client.post("/admin/conversations", body);
        }

        @Override
        void print(JsonNode r) {
            out().print("created ");
            super.print(r);
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true,
            description = "Show a conversation: kind, head and every membership period (FROM..TO seqs; TO '-' = current member).")
    static final class ConvShow extends ConvLeaf {
        @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
        String conv;

        @Override
        JsonNode request(AdminClient client) {
            return client.get("/admin/conversations/" + AdminClient.segment(conv));
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List conversations in id order with head and current member count.")
    static final class ConvList extends PagedList {
        ConvList() {
            super("/admin/conversations");
        }

        @Override
        Table table(JsonNode r) {
            Table t = new Table("CONV", "KIND", "HEAD", "MEMBERS");
            for (JsonNode c : r.get("conversations")) {
                t.row(c.get("conv").asText(), c.get("kind").asText(), c.get("head").asLong(), c.get("members").asInt());
            }
            return t;
        }
    }

    // ------------------------------------------------------------------ membership

    @Command(name = "member", aliases = "members", mixinStandardHelpOptions = true,
            description = "Add and remove members (join and leave events in the conversation log).",
            subcommands = {MemberAdd.class, MemberRemove.class})
    static final class Member {
    }

    abstract static class MemberLeaf extends Leaf {
        @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
        String conv;

        @Parameters(index = "1", paramLabel = "USER", description = "User id.")
        String user;

        String path() {
            return "/admin/conversations/" + AdminClient.segment(conv) + "/members/" + AdminClient.segment(user);
        }
    }

    @Command(name = "add", mixinStandardHelpOptions = true,
            description = "Add a member (a join event); adding a current member changes nothing.")
    static final class MemberAdd extends MemberLeaf {
        @Override
        JsonNode request(AdminClient client) {
            return client.put(path());
        }

        @Override
        void print(JsonNode r) {
            out().println(r.get("changed").asBoolean()
                    ? user + " joined " + conv + " at seq " + r.get("seq").asLong()
                    : user + " is already a member of " + conv + " (joined at seq " + r.get("seq").asLong() + ")");
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true,
            description = "Remove a member (a leave event, which the member still sees); NOT_MEMBER if not one.")
    static final class MemberRemove extends MemberLeaf {
        @Override
        JsonNode request(AdminClient client) {
            return client.delete(path());
        }

        @Override
        void print(JsonNode r) {
            out().println(user + " left " + conv + " at seq " + r.get("seq").asLong());
        }
    }

    @Command(name = "message", aliases = "messages", mixinStandardHelpOptions = true,
            description = "Moderate messages.", subcommands = {MessageRecall.class})
    static final class Message {
    }

    @Command(name = "recall", mixinStandardHelpOptions = true,
            description = "Recall a message for every member, whoever sent it and whenever (a recall event in the sender's name;"
                    + " the message's text is gone from every read path). Recalling it again changes nothing.")
    static final class MessageRecall extends Leaf {
        @Parameters(index = "0", paramLabel = "CONV", description = "Conversation id.")
        String conv;

        @Parameters(index = "1", paramLabel = "SEQ", description = "The message's seq.")
        long seq;

        @Override
        JsonNode request(AdminClient client) {
            return client.post("/admin/conversations/" + AdminClient.segment(conv) + "/messages/" + seq + "/recall", null);
        }

        @Override
        void print(JsonNode r) {
            out().println("recalled " + conv + " " + seq + " (recall at seq " + r.get("seq").asLong() + ")"
                    + (r.get("dup").asBoolean() ? ": it was already recalled" : ""));
        }
    }
}
