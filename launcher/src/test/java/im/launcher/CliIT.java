package im.launcher;

import im.infra.ops.Metrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.delivery.route.DeliveryConfig;
import im.delivery.route.DeliveryNode;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.relay.CdcRelay;
import im.relay.RelayConfig;
import im.sweeper.Sweeper;
import im.sweeper.SweeperConfig;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The client commands against a real running platform (PostgreSQL, Kafka, CDC relay, a delivery
 * node, a sweeper and a gateway in this JVM), run in-process through {@link Im#commandLine()} with their
 * stdout and stderr captured.
 */
@ExtendWith(ImStackExtension.class)
class CliIT {
    static final String ADMIN = "cli-test-admin-token-0123456789";
    private final List<AutoCloseable> started = new ArrayList<>();
    private final ExecutorService background = Executors.newCachedThreadPool();

    @AfterEach
    void stop() throws Exception {
        background.shutdownNow();
        for (int i = started.size() - 1; i >= 0; i--) started.get(i).close();
    }

    record Run(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** Runs {@code im args...} in this JVM; {@code live} receives stdout/stderr as they are written. */
    private static Run im(StringWriter out, StringWriter err, String... args) {
        CommandLine cl = Im.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    private static Run im(String... args) {
        return im(new StringWriter(), new StringWriter(), args);
    }

    static String[] with(String[] first, String... more) {
        String[] all = new String[first.length + more.length];
        System.arraycopy(first, 0, all, 0, first.length);
        System.arraycopy(more, 0, all, first.length, more.length);
        return all;
    }

    private Gateway gateway(TestStack stack, Settings s, String faults) {
        // An earlier test in this JVM may have started the broker: then the gateway uses Kafka and needs the topics.
        s.optional(ConfigKeys.KAFKA_BOOTSTRAP).ifPresent(b -> SharedTopics.create(b, s));
        Gateway g = Gateway.start(GatewayConfig.from(s), stack.dataSource(), Faults.parse(faults), Clock.systemUTC());
        started.add(g);
        return g;
    }

    private static Run ok(Run r) {
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    /** A failed client command: exit 1 (or 2 for usage), the expected text on stderr, no stack trace. */
    private static Run fails(int code, String expected, Run r) {
        assertEquals(code, r.code(), r.toString());
        assertTrue(r.err().contains(expected), "stderr should say '" + expected + "'\n" + r);
        assertFalse(r.err().contains("\tat ") || r.err().contains("Exception"), "no stack trace\n" + r);
        return r;
    }

    private static void createUsers(String[] admin, String... users) {
        for (String u : users) ok(im(with(new String[] {"admin", "user", "create", u}, admin)));
    }

    /** Registers a device with {@code im admin} and returns its token. */
    private static String register(String[] admin, String user, String device) {
        return ok(im(with(new String[] {"admin", "device", "register", user, device}, admin))).out().trim();
    }

    private static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * Settings for every role of a platform in this JVM on the test stack (Kafka started first),
     * with the admin token {@link #ADMIN}, fast heartbeats and sweeps, three partitions.
     */
    static Settings platformSettings(TestStack stack) {
        stack.kafkaBootstrap();
        return stack.settings(Map.of(
                ConfigKeys.RELAY_SLOT.name(), "s_" + stack.database(),
                ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_TOKEN.name(), ADMIN,
                ConfigKeys.GATEWAY_HEARTBEAT_MS.name(), "500",
                ConfigKeys.GATEWAY_LEASE_MS.name(), "3000",
                ConfigKeys.INTEREST_RENEW_MS.name(), "1000",
                ConfigKeys.SWEEP_MS.name(), "500",
                ConfigKeys.PARTITIONS.name(), "3"));
    }

    /**
     * Every role of a platform on the test stack ({@link #platformSettings}), running: the CDC relay,
     * a delivery node, a sweeper (it repairs a push lost before the interest was routed) and a gateway.
     */
    private Gateway platform(TestStack stack, Settings s) {
        SharedTopics.create(stack.kafkaBootstrap(), s);
        CdcRelay relay = CdcRelay.start(RelayConfig.from(s), TopicNames.from(s), Metrics.detached());
        started.add(relay);
        DeliveryNode node = DeliveryNode.start(DeliveryConfig.from(s), Metrics.detached());
        started.add(node);
        Sweeper sweeper = Sweeper.start(SweeperConfig.from(s), Metrics.detached());
        started.add(sweeper);
        Gateway gw = gateway(stack, s, "");
        Await.until(Duration.ofSeconds(60), () -> relay.isActive() && node.isRunning() && sweeper.isRunning(), "relay active, delivery node and sweeper running");
        return gw;
    }

    @Test
    void adminSendTailLagAndEventsTailAgainstARunningPlatform(TestStack stack) throws Exception {
        String bootstrap = stack.kafkaBootstrap();
        Settings s = platformSettings(stack);
        TopicNames topics = TopicNames.from(s);
        Gateway gw = platform(stack, s);
        String url = "http://127.0.0.1:" + gw.port();
        String[] admin = {"--admin-url", "http://127.0.0.1:" + gw.adminPort(), "--admin-token", ADMIN};

        // users, devices, a conversation, membership
        assertEquals("created user u-ana\n", ok(im(with(new String[] {"admin", "user", "create", "u-ana", "--name", "Ana"}, admin))).out());
        ok(im(with(new String[] {"admin", "user", "create", "u-bo"}, admin)));
        ok(im(with(new String[] {"admin", "users", "create", "u-cy"}, admin)));
        Run reg = ok(im(with(new String[] {"admin", "device", "register", "u-ana", "d-ana"}, admin)));
        String ana = reg.out().trim();
        assertTrue(ana.startsWith("imt_") && !ana.contains("\n"), "stdout is the token alone: " + reg);
        assertTrue(reg.err().contains("registered device d-ana of u-ana (install 1)"), reg.toString());
        String bo = ok(im(with(new String[] {"admin", "device", "register", "u-bo", "d-bo"}, admin))).out().trim();
        String cy = ok(im(with(new String[] {"admin", "device", "register", "u-cy", "d-cy"}, admin))).out().trim();
        Run created = ok(im(with(new String[] {"admin", "conv", "create", "c-ab", "u-ana", "u-bo", "--kind", "direct"}, admin)));
        assertTrue(created.out().startsWith("created c-ab  direct  head 2\n"), created.toString());
        assertTrue(created.out().contains("u-bo    2     -"), created.toString());

        Run users = ok(im(with(new String[] {"admin", "user", "list", "--limit", "2"}, admin)));
        assertTrue(users.out().matches("(?s)USER +NAME +DEVICES\nu-ana +Ana +1\nu-bo +1\n"), users.toString());
        assertTrue(users.err().contains("more: repeat with --after u-bo"), users.toString());
        assertTrue(ok(im(with(new String[] {"admin", "user", "list", "--after", "u-bo"}, admin))).out().contains("u-cy"));
        assertTrue(ok(im(with(new String[] {"admin", "device", "list", "u-ana"}, admin))).out().matches("(?s)DEVICE +EPOCH.*\nd-ana +1 .*"));
        assertTrue(ok(im(with(new String[] {"admin", "conv", "list"}, admin))).out().matches("(?s)CONV +KIND +HEAD +MEMBERS\nc-ab +direct +2 +2\n"));
        assertEquals("u-cy joined c-ab at seq 3\n", ok(im(with(new String[] {"admin", "member", "add", "c-ab", "u-cy"}, admin))).out());
        assertEquals("u-cy is already a member of c-ab (joined at seq 3)\n",
                ok(im(with(new String[] {"admin", "member", "add", "c-ab", "u-cy"}, admin))).out());
        assertEquals("u-cy left c-ab at seq 4\n", ok(im(with(new String[] {"admin", "member", "remove", "c-ab", "u-cy"}, admin))).out());
        Run show = ok(im(with(new String[] {"admin", "conv", "show", "c-ab"}, admin)));
        assertTrue(show.out().matches("(?s)c-ab  direct  head 4\n.*u-cy +3 +4\n"), show.toString());
        assertTrue(ok(im(with(new String[] {"admin", "conv", "show", "c-ab", "--json"}, admin))).out().startsWith("{\"conv\":\"c-ab\""));
        Run reinstall = ok(im(with(new String[] {"admin", "device", "reinstall", "d-cy"}, admin)));
        assertTrue(reinstall.err().contains("install 2"), reinstall.toString());
        fails(1, "STALE_INSTALL: ", im("send", "--gateway", url, "--token", cy, "--conv", "c-ab", "hi"));
        cy = reinstall.out().trim();
        Run renew = ok(im(with(new String[] {"admin", "device", "renew", "d-cy"}, admin)));
        assertTrue(renew.err().contains("renewed device d-cy of u-cy (install 2)") && renew.err().contains("valid until 20"),
                renew.toString());
        fails(1, "BAD_TOKEN: ", im("send", "--gateway", url, "--token", cy, "--conv", "c-ab", "hi"));
        cy = renew.out().trim();
        assertTrue(ok(im(with(new String[] {"admin", "device", "list", "u-cy"}, admin))).out()
                .matches("(?s)DEVICE +EPOCH +CREATED +UPDATED +TOKEN EXPIRES\\nd-cy +2 .* 20\\d\\d-.*"));

        // tail as bo: the history from seq 1 (bo sees from his join, seq 2), then live pushes of what ana sends
        StringWriter tailOut = new StringWriter();
        StringWriter tailErr = new StringWriter();
        Future<Run> tail = background.submit(() ->
                im(tailOut, tailErr, "tail", "--gateway", url, "--token", bo, "--conv", "c-ab", "--from", "1", "-n", "5"));
        Await.until(Duration.ofSeconds(60), () -> tailOut.toString().contains("* left"), "tail printed the history");
        assertTrue(tailErr.toString().contains("subscribed as u-bo / d-bo, following c-ab from seq 1 (acking; delivered cursor 0)"),
                tailErr.toString());

        Run sent = ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "hello bo"));
        assertTrue(sent.out().matches("sent c-ab seq=5 mid=[0-9a-f-]{36} dup=false\n"), sent.toString());
        assertTrue(sent.err().contains("connecting to ws://127.0.0.1:" + gw.port() + "/ws"), sent.toString());
        Run second = ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "--cmid", "m-2", "line one\nline two"));
        Run resend = ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "--cmid", "m-2", "line one\nline two"));
        assertTrue(second.out().contains("seq=6") && second.out().contains("dup=false"), second.toString());
        String mid = second.out().replaceAll("(?s).*mid=(\\S+).*", "$1");
        assertEquals("sent c-ab seq=6 mid=" + mid + " dup=true\n", resend.out(), "a resend with the same cmid: the original seq");

        Run tailed;
        try {
            tailed = tail.get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("tail did not print 5 events\n--- stdout\n" + tailOut + "--- stderr\n" + tailErr);
        }
        ok(tailed);
        String[] lines = tailed.out().split("\n");
        assertEquals(5, lines.length, tailed.toString());
        assertTrue(lines[0].matches("2  \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z  u-bo  \\* joined"), "seq 1 is before bo's join: " + lines[0]);
        assertTrue(lines[2].matches("4  .*  u-cy  \\* left"), lines[2]);
        assertTrue(lines[3].matches("5  .*  u-ana  hello bo"), lines[3]);
        assertTrue(lines[4].matches("6  .*  u-ana  line one\\\\nline two"), "one line per event: " + lines[4]);
        assertTrue(tailed.err().contains("stopped after 5 events; d-bo delivered cursor in c-ab: 6"), tailed.toString());

        // lag: bo acked everything it printed; ana never acked; cy (left at seq 4) sees only up to 4
        Run lag = ok(im(with(new String[] {"lag", "--conv", "c-ab"}, admin)));
        assertTrue(lag.out().matches("(?s)CONV +USER +DEVICE +DELIVERED +HEAD +LAG\n"
                + "c-ab +u-ana +d-ana +0 +6 +6\n"
                + "c-ab +u-bo +d-bo +6 +6 +0\n"
                + "c-ab +u-cy \\(left\\) +d-cy +0 +4 +4\n"), lag.toString());
        Run lagging = ok(im(with(new String[] {"lag", "--lagging"}, admin)));
        assertFalse(lagging.out().contains("d-bo"), lagging.toString());
        assertTrue(lagging.out().contains("d-ana"), lagging.toString());
        // --top: the most lagging devices over every conversation, in one request (c-solo below adds none yet)
        Run top = ok(im(with(new String[] {"lag", "--top", "1"}, admin)));
        assertTrue(top.out().matches("(?s)CONV +USER +DEVICE +DELIVERED +HEAD +LAG +BEHIND\n"
                + "c-ab +u-ana +d-ana +0 +6 +6 +\\d+(ms|s|m)\n"), top.toString());
        Run top5 = ok(im(with(new String[] {"lag", "--top", "5", "--json"}, admin)));
        assertTrue(top5.out().matches("\\{\"devices\":\\[\\{\"conv\":\"c-ab\",\"user\":\"u-ana\",\"device\":\"d-ana\",.*\"lag\":6,.*"
                + "\\{\"conv\":\"c-ab\",\"user\":\"u-cy\",\"device\":\"d-cy\",\"member\":false,\"visibleHead\":4,\"delivered\":0,\"lag\":4,.*\\]\\}\n"),
                "bo (lag 0) is not listed: " + top5);
        assertFalse(top5.out().contains("d-bo"), top5.toString());
        fails(2, "--top lists every conversation", im(with(new String[] {"lag", "--top", "3", "--conv", "c-ab"}, admin)));
        fails(2, "--top: must be from 1 to 1000", im(with(new String[] {"lag", "--top", "0"}, admin)));

        // tail again without --from: resumes after the device's cursor, so only the new message is printed
        StringWriter resumedErr = new StringWriter();
        Future<Run> resumed = background.submit(() -> im(new StringWriter(), resumedErr,
                "tail", "--gateway", url, "--token", bo, "--conv", "c-ab", "--no-ack", "-n", "1", "--json"));
        Await.until(Duration.ofSeconds(60), () -> resumedErr.toString().contains("following c-ab from seq 7 (--no-ack: not acking)"), "resumed tail subscribed");
        ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "seven"));
        Run r7 = ok(resumed.get(60, TimeUnit.SECONDS));
        assertTrue(r7.out().matches("\\{\"conv\":\"c-ab\",\"seq\":7,\"kind\":\"msg\".*\"body\":\"seven\".*\\}\n"), r7.toString());
        Run lag7 = ok(im(with(new String[] {"lag", "--conv", "c-ab"}, admin)));
        assertTrue(lag7.out().matches("(?s).*\nc-ab +u-bo +d-bo +6 +7 +1\n.*"), "--no-ack left the cursor: " + lag7);

        // the public event topic as a data team sees it
        String[] events = {"events", "tail", "--bootstrap", bootstrap, "--topic-prefix", stack.topicPrefix(), "--from-beginning"};
        Run ev = ok(im(with(events, "--conv", "c-ab", "-n", "6")));
        assertTrue(ev.err().contains("following " + topics.events() + " (conversation c-ab on partition "), ev.toString());
        assertTrue(ev.out().matches("(?s)p\\d@0  c-ab #1  join  u-ana  .*"), ev.toString());
        assertTrue(ev.out().matches("(?s).*\np\\d@\\d+  c-ab #5  msg  u-ana  \\d{4}-[^ ]+Z  hello bo\n.*"), ev.toString());
        Run raw = ok(im(with(events, "--json", "-n", "1")));
        assertTrue(raw.out().startsWith("{\"v\":1,\"conv\":\"c-ab\",\"seq\":1,"), raw.toString());
        fails(1, "topic nope.events does not exist at " + bootstrap,
                im("events", "tail", "--bootstrap", bootstrap, "--topic-prefix", "nope.", "--timeout", "5"));

        // refusals by the platform
        fails(1, "NOT_MEMBER: ", im("send", "--gateway", url, "--token", cy, "--conv", "c-ab", "hi"));
        ok(im(with(new String[] {"admin", "conv", "create", "c-solo", "u-ana"}, admin)));
        fails(1, "NOT_MEMBER: ", im("tail", "--gateway", url, "--token", bo, "--conv", "c-solo"));
        fails(1, "NOT_MEMBER: ", im("tail", "--gateway", url, "--token", bo, "--conv", "c-none"));
    }

    @Test
    void readMovesTheReadCursorUnreadListsTheCountsAndTailShowsTheOtherDevicesReads(TestStack stack) throws Exception {
        Gateway gw = platform(stack, platformSettings(stack));
        String url = "http://127.0.0.1:" + gw.port();
        String[] admin = {"--admin-url", "http://127.0.0.1:" + gw.adminPort(), "--admin-token", ADMIN};
        createUsers(admin, "u-ana", "u-bo");
        String ana = register(admin, "u-ana", "d-ana");
        String bo = register(admin, "u-bo", "d-bo");
        String bo2 = register(admin, "u-bo", "d-bo2");
        String bo3 = register(admin, "u-bo", "d-bo3");
        ok(im(with(new String[] {"admin", "conv", "create", "c-ab", "u-ana", "u-bo", "--kind", "direct"}, admin)));   // joins: seq 1, 2
        ok(im(with(new String[] {"admin", "conv", "create", "c-solo", "u-ana"}, admin)));
        for (String text : List.of("three", "four", "five")) ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", text));

        // bo has read nothing: ana's three messages are unread (joins never count); ana's own never count for her
        String[] unreadBo = {"unread", "--gateway", url, "--token", bo};
        Run before = ok(im(unreadBo));
        assertTrue(before.out().matches("CONV +READ +UNREAD +HEAD\nc-ab +0 +3 +5\ntotal 3 unread in 1 conversations\n"), before.toString());
        Run anas = ok(im("unread", "--gateway", url, "--token", ana));
        assertTrue(anas.out().matches("CONV +READ +UNREAD +HEAD\nc-ab +0 +0 +5\nc-solo +0 +0 +1\ntotal 0 unread in 2 conversations\n"), anas.toString());
        assertEquals("{\"conv\":\"c-ab\",\"head\":5,\"delivered\":0,\"read\":0,\"unread\":3}\n", ok(im(with(unreadBo, "--json"))).out());

        // bo's other devices follow c-ab (in text and in JSON): they show the read state each read of d-bo leaves
        StringWriter tailOut = new StringWriter();
        StringWriter tailErr = new StringWriter();
        Future<Run> tail = background.submit(() ->
                im(tailOut, tailErr, "tail", "--gateway", url, "--token", bo2, "--conv", "c-ab", "--from", "6", "-n", "1"));
        StringWriter jsonErr = new StringWriter();
        Future<Run> jsonTail = background.submit(() ->
                im(new StringWriter(), jsonErr, "tail", "--gateway", url, "--token", bo3, "--conv", "c-ab", "--from", "6", "-n", "1", "--json"));
        Await.until(Duration.ofSeconds(60), () -> tailErr.toString().contains("subscribed as u-bo / d-bo2")
                && jsonErr.toString().contains("subscribed as u-bo / d-bo3"), "both tails subscribed");

        Run read4 = ok(im("read", "--gateway", url, "--token", bo, "c-ab", "4"));
        assertEquals("read 4 in c-ab: 1 unread (head 5)\n", read4.out(), read4.toString());
        assertTrue(read4.err().contains("authenticated as u-bo / d-bo; reading c-ab up to seq 4"), read4.toString());
        Await.until(Duration.ofSeconds(60), () -> tailOut.toString().contains("unread c-ab: 1 (read 4, head 5)\n"), "tail showed the read of d-bo");
        assertTrue(ok(im(unreadBo)).out().matches("(?s).*\nc-ab +4 +1 +5\ntotal 1 unread in 1 conversations\n"), "the count went down");

        // without SEQ: up to the head subbed reports, i.e. all read
        Run all = ok(im("read", "--gateway", url, "--token", bo, "c-ab", "--json"));
        assertTrue(all.out().matches("\\{\"t\":\"readack\",\"rid\":\"cli\\d+\",\"conv\":\"c-ab\",\"read\":5,\"unread\":0,\"head\":5\\}\n"), all.toString());
        Await.until(Duration.ofSeconds(60), () -> tailOut.toString().contains("unread c-ab: 0 (read 5, head 5)\n"), "tail showed the second read");
        assertEquals("read 5 in c-ab: 0 unread (head 5)\n", ok(im("read", "--gateway", url, "--token", bo, "c-ab", "3")).out(),
                "the read cursor only moves up");
        Run after = ok(im(unreadBo));
        assertTrue(after.out().matches("CONV +READ +UNREAD +HEAD\nc-ab +5 +0 +5\ntotal 0 unread in 1 conversations\n"), after.toString());

        // an unread push is not an event: the tail stops at the first event, the next message
        ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "six"));
        Run tailed = ok(tail.get(60, TimeUnit.SECONDS));
        String[] lines = tailed.out().split("\n");
        assertEquals(3, lines.length, tailed.toString());
        assertEquals("unread c-ab: 1 (read 4, head 5)", lines[0]);
        assertEquals("unread c-ab: 0 (read 5, head 5)", lines[1]);
        assertTrue(lines[2].matches("6  .*  u-ana  six"), lines[2]);
        Run json = ok(jsonTail.get(60, TimeUnit.SECONDS));
        assertTrue(json.out().matches("\\{\"t\":\"unread\",\"conv\":\"c-ab\",\"read\":4,\"unread\":1,\"head\":5\\}\n"
                + "\\{\"t\":\"unread\",\"conv\":\"c-ab\",\"read\":5,\"unread\":0,\"head\":5\\}\n"
                + "\\{\"conv\":\"c-ab\",\"seq\":6,\"kind\":\"msg\".*\"body\":\"six\".*\\}\n"), "the wire frame, the ev object: " + json);

        // refusals
        fails(1, "CURSOR_AHEAD: ", im("read", "--gateway", url, "--token", bo, "c-ab", "99"));
        fails(1, "NOT_MEMBER: ", im("read", "--gateway", url, "--token", bo, "c-solo"));
        fails(1, "NOT_MEMBER: ", im("read", "--gateway", url, "--token", bo, "c-none", "1"));
        fails(2, "SEQ: must be 0 or more", im("read", "--gateway", url, "--token", bo, "c-ab", "-1"));
        fails(2, "Missing required parameter: 'CONV'", im("read", "--gateway", url, "--token", bo));
        fails(1, "BAD_TOKEN: ", im("unread", "--gateway", url, "--token", "imt_not-a-token"));
    }

    @Test
    void editRecallAndTypingAreSeenByTailAndReceiptsCountReadersAndDevices(TestStack stack) throws Exception {
        Gateway gw = platform(stack, platformSettings(stack));
        String url = "http://127.0.0.1:" + gw.port();
        String[] admin = {"--admin-url", "http://127.0.0.1:" + gw.adminPort(), "--admin-token", ADMIN};
        createUsers(admin, "u-ana", "u-bo");
        String ana = register(admin, "u-ana", "d-ana");
        String bo = register(admin, "u-bo", "d-bo");
        register(admin, "u-bo", "d-bo2");
        ok(im(with(new String[] {"admin", "conv", "create", "c-ab", "u-ana", "u-bo", "--kind", "direct"}, admin)));   // joins: seq 1, 2
        ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "helo bo"));   // seq 3
        ok(im("send", "--gateway", url, "--token", ana, "--conv", "c-ab", "oops"));      // seq 4

        // bo follows c-ab: the history, ana typing, then her edit and recall as they come
        StringWriter tailOut = new StringWriter();
        StringWriter tailErr = new StringWriter();
        Future<Run> tail = background.submit(() ->
                im(tailOut, tailErr, "tail", "--gateway", url, "--token", bo, "--conv", "c-ab", "--from", "1", "-n", "5"));
        Await.until(Duration.ofSeconds(60), () -> tailOut.toString().contains("u-ana  oops"), "tail printed the history");
        // typing is best effort (never repaired by the sweeper): say it again until the tail shows it
        Await.until(Duration.ofSeconds(60), () -> {
            Run typing = ok(im("typing", "--gateway", url, "--token", ana, "c-ab"));
            assertEquals("typing in c-ab\n", typing.out(), typing.toString());
            return tailOut.toString().contains("u-ana is typing in c-ab\n");
        }, "tail showed ana typing");

        Run edited = ok(im("edit", "--gateway", url, "--token", ana, "c-ab", "3", "hello bo"));
        assertEquals("edited c-ab 3 (edit at seq 5)\n", edited.out(), edited.toString());
        assertEquals("recalled c-ab 4 (recall at seq 6)\n", ok(im("recall", "--gateway", url, "--token", ana, "c-ab", "4")).out());
        assertEquals("recalled c-ab 4 (recall at seq 6): it was already recalled\n",
                ok(im("recall", "--gateway", url, "--token", ana, "c-ab", "4")).out());
        Run tailed = ok(tail.get(60, TimeUnit.SECONDS));
        List<String> lines = List.of(tailed.out().split("\n"));
        assertTrue(lines.get(lines.size() - 2).matches("5  .*  u-ana  \\* edited #3: hello bo"), tailed.toString());
        assertTrue(lines.get(lines.size() - 1).matches("6  .*  u-ana  \\* recalled #4"), tailed.toString());
        assertTrue(lines.stream().filter(l -> l.equals("u-ana is typing in c-ab")).count() >= 1, "not an event, not counted: " + tailed);
        assertEquals(5, lines.stream().filter(l -> l.matches("\\d+  .*")).count(), tailed.toString());
        // synced afterwards, the recalled message is a tombstone
        Run again = ok(im("tail", "--gateway", url, "--token", bo, "--conv", "c-ab", "--from", "3", "--no-ack", "-n", "4"));
        assertTrue(again.out().matches("(?s)3  .*  u-ana  helo bo\n4  .*  u-ana  \\(recalled\\)\n5  .*\n6  .*\n"), again.toString());

        // receipts of ana's message: bo's d-bo stored it (tail acked 6), d-bo2 did not; read once bo reads
        String[] receipts = {"receipts", "--gateway", url, "--token", ana, "c-ab", "3"};
        Await.until(Duration.ofSeconds(30), () -> ok(im(receipts)).out().matches("SEQ +READ/MEMBERS +DELIVERED/DEVICES\n3 +0/1 +1/2\n"),
                "receipts count d-bo's ack");
        ok(im("read", "--gateway", url, "--token", bo, "c-ab", "3"));
        Run read = ok(im(receipts));
        assertTrue(read.out().matches("SEQ +READ/MEMBERS +DELIVERED/DEVICES\n3 +1/1 +1/2\n"), read.toString());
        assertTrue(ok(im(with(receipts, "--json"))).out().matches("\\{\"t\":\"receipts\",\"rid\":\"cli\\d+\",\"conv\":\"c-ab\","
                + "\"receipts\":\\[\\{\"seq\":3,\"members\":1,\"read\":1,\"devices\":2,\"delivered\":1\\}\\]\\}\n"));
        Run json = ok(im("edit", "--gateway", url, "--token", ana, "c-ab", "3", "hello again", "--json"));
        assertTrue(json.out().matches("\\{\"t\":\"sent\",\"rid\":\"cli\\d+\",\"conv\":\"c-ab\",\"seq\":7,.*\"dup\":false.*\\}\n"), json.toString());

        // refusals
        fails(1, "NOT_SENDER: ", im("edit", "--gateway", url, "--token", bo, "c-ab", "3", "not mine"));
        fails(1, "NOT_SENDER: ", im("recall", "--gateway", url, "--token", bo, "c-ab", "3"));
        fails(1, "NOT_SENDER: ", im("receipts", "--gateway", url, "--token", bo, "c-ab", "3"));
        fails(1, "NOT_A_MESSAGE: ", im("edit", "--gateway", url, "--token", ana, "c-ab", "1", "a join"));
        fails(1, "RECALLED: ", im("edit", "--gateway", url, "--token", ana, "c-ab", "4", "back"));
        fails(1, "NOT_MEMBER: ", im("typing", "--gateway", url, "--token", bo, "c-none"));
        fails(2, "Missing required parameter: 'SEQ'", im("receipts", "--gateway", url, "--token", ana, "c-ab"));
        fails(2, "SEQ: each seq at most once", im("receipts", "--gateway", url, "--token", ana, "c-ab", "3", "3"));

        // moderation: an admin recalls ana's message (edited twice) in her name, once
        assertEquals("recalled c-ab 3 (recall at seq 8)\n", ok(im(with(new String[] {"admin", "message", "recall", "c-ab", "3"}, admin))).out());
        assertEquals("recalled c-ab 3 (recall at seq 8): it was already recalled\n",
                ok(im(with(new String[] {"admin", "message", "recall", "c-ab", "3"}, admin))).out());
        Run tomb = ok(im("tail", "--gateway", url, "--token", bo, "--conv", "c-ab", "--from", "3", "--no-ack", "-n", "1"));
        assertTrue(tomb.out().matches("3  .*  u-ana  \\(recalled\\)\n"), tomb.toString());
        fails(1, "admin API: 404 NOT_A_MESSAGE", im(with(new String[] {"admin", "message", "recall", "c-ab", "1"}, admin)));
    }

    @Test
    void failuresAreOneClearLineWithANonZeroExit(TestStack stack) throws Exception {
        Gateway gw = gateway(stack, stack.settings(Map.of(ConfigKeys.GATEWAY_PORT.name(), "0", ConfigKeys.ADMIN_TOKEN.name(), ADMIN)), "");
        String url = "http://127.0.0.1:" + gw.port();
        String adminUrl = "http://127.0.0.1:" + gw.adminPort();
        String down = "http://127.0.0.1:" + closedPort();

        fails(1, "admin API: 401 UNAUTHORIZED missing or wrong admin token",
                im("admin", "user", "list", "--admin-url", adminUrl, "--admin-token", "not-the-admin-token"));
        fails(1, "cannot reach the admin API at " + down + ": connection refused",
                im("admin", "user", "list", "--admin-url", down, "--admin-token", ADMIN));
        fails(1, "admin API: unexpected HTTP 404 from " + url + "/admin/users?limit=",
                im("admin", "user", "list", "--admin-url", url, "--admin-token", ADMIN));
        fails(1, "admin API: 400 INVALID user: must match",
                im("admin", "user", "create", "has space", "--admin-url", adminUrl, "--admin-token", ADMIN));
        fails(1, "admin API: 404 NOT_FOUND no conversation c-none",
                im("admin", "conv", "show", "c-none", "--admin-url", adminUrl, "--admin-token", ADMIN));
        fails(1, "BAD_TOKEN: ", im("send", "--gateway", url, "--token", "imt_not-a-token", "--conv", "c-ab", "hi"));
        fails(1, "BAD_TOKEN: ", im("tail", "--gateway", url, "--token", "imt_not-a-token", "--conv", "c-ab"));
        fails(1, "cannot reach gateway at ws://127.0.0.1:" + down.substring(down.lastIndexOf(':') + 1) + "/ws: connection refused",
                im("send", "--gateway", down, "--token", "imt_x", "--conv", "c-ab", "hi"));
        fails(1, "cannot reach Kafka at 127.0.0.1:", im("events", "tail", "--bootstrap", "127.0.0.1:" + closedPort(), "--timeout", "2"));
        if (System.getenv("IM_ADMIN_TOKEN") == null) {
            fails(2, "no admin token: pass --admin-token or set IM_ADMIN_TOKEN", im("admin", "user", "list", "--admin-url", adminUrl));
        }

        // usage errors: exit 2 with the usage
        fails(2, "Missing required option", im("send", "--gateway", url, "--conv", "c-ab", "hi"));
        fails(2, "Missing required parameter", im("send", "--gateway", url, "--token", "imt_x", "--conv", "c-ab"));
        fails(2, "Missing required subcommand", im("admin"));
        fails(2, "Missing required parameter", im("admin", "conv", "create", "c-x"));
        fails(2, "--admin-url: expected http://host:port or https://host:port, got ftp://x", im("admin", "user", "list", "--admin-url", "ftp://x", "--admin-token", ADMIN));
        fails(2, "Unknown options: '--gateway'", im("admin", "user", "list", "--gateway", url, "--admin-token", ADMIN));
        fails(2, "Invalid value for option '--limit'", im("admin", "user", "list", "--limit", "many"));
    }

    @Test
    void importCreatesUsersDevicesAndMembersFromFilesInChunksAndRunsAgainWithoutHarm(TestStack stack, @TempDir Path dir) throws Exception {
        Gateway gw = gateway(stack, stack.settings(Map.of(ConfigKeys.GATEWAY_PORT.name(), "0", ConfigKeys.ADMIN_TOKEN.name(), ADMIN)), "");
        String[] admin = {"--admin-url", "http://127.0.0.1:" + gw.adminPort(), "--admin-token", ADMIN, "--chunk", "10"};
        StringBuilder users = new StringBuilder("# user,display name\n\n");
        StringBuilder devices = new StringBuilder();
        StringBuilder members = new StringBuilder();
        for (int i = 0; i < 25; i++) {
            users.append("u-").append(i).append(",User ").append(i).append('\n');
            devices.append("u-").append(i).append(",d-").append(i).append('\n');
            members.append("u-").append(i).append('\n');
        }
        Path usersFile = Files.writeString(dir.resolve("users.txt"), users);
        Path devicesFile = Files.writeString(dir.resolve("devices.txt"), devices);
        Path membersFile = Files.writeString(dir.resolve("members.txt"), members);

        assertEquals("created 25 users\n", ok(im(with(new String[] {"admin", "import", "users", usersFile.toString()}, admin))).out());
        assertEquals("created 0 users, 25 existed already\n",
                ok(im(with(new String[] {"admin", "import", "users", usersFile.toString()}, admin))).out(), "run again without harm");
        Run regs = ok(im(with(new String[] {"admin", "import", "devices", devicesFile.toString()}, admin)));
        List<String> lines = List.of(regs.out().split("\n"));
        assertEquals(25, lines.size(), regs.toString());
        assertTrue(lines.get(24).matches("d-24 imt_\\S+"), "DEVICE TOKEN per new device: " + lines.get(24));
        assertTrue(regs.err().contains("registered 25 devices"), regs.toString());
        ok(im(with(new String[] {"admin", "conv", "create", "g-all", "u-0", "--kind", "group"}, Arrays.copyOf(admin, 4))));
        assertEquals("added 24 members to g-all, 1 were members already; head 4\n",   // one join event per chunk of 10 lines
                ok(im(with(new String[] {"admin", "import", "members", "g-all", membersFile.toString()}, admin))).out());

        StringBuilder late = new StringBuilder();
        for (int i = 0; i < 14; i++) late.append("u-").append(i).append(",d-late-").append(i).append('\n');
        Path bad = Files.writeString(dir.resolve("bad.txt"), late + "u-y\n");   // a bad line in the second chunk
        fails(2, "line 15: expected USER,DEVICE, got: u-y", im(with(new String[] {"admin", "import", "devices", bad.toString()}, admin)));
        assertFalse(ok(im(with(new String[] {"admin", "device", "list", "u-0"}, Arrays.copyOf(admin, 4)))).out().contains("d-late-0"),
                "nothing was sent: the first chunk was not registered");
        Path unknown = Files.writeString(dir.resolve("unknown.txt"), "u-1\nu-nobody\n");
        fails(1, "admin API: 404 NOT_FOUND no user u-nobody (lines 1-2; the 0 lines before them were imported",
                im(with(new String[] {"admin", "import", "members", "g-all", unknown.toString()}, admin)));
        fails(1, "cannot read " + dir.resolve("none.txt"), im(with(new String[] {"admin", "import", "users", dir.resolve("none.txt").toString()}, admin)));
    }

    @Test
    void sendWaitsForTheSentReplyAndDoesNotHangOnALostOne(TestStack stack) throws Exception {
        // the gateway drops every sent reply: the send is committed, the reply never comes
        Gateway gw = gateway(stack, stack.settings(Map.of(ConfigKeys.GATEWAY_PORT.name(), "0",
                ConfigKeys.ADMIN_TOKEN.name(), ADMIN)), "gw.reply.send:drop");
        String url = "http://127.0.0.1:" + gw.port();
        String[] admin = {"--admin-url", "http://127.0.0.1:" + gw.adminPort(), "--admin-token", ADMIN};
        ok(im(with(new String[] {"admin", "user", "create", "u-ana"}, admin)));
        ok(im(with(new String[] {"admin", "user", "create", "u-bo"}, admin)));
        String ana = ok(im(with(new String[] {"admin", "device", "register", "u-ana", "d-ana"}, admin))).out().trim();
        ok(im(with(new String[] {"admin", "conv", "create", "c-ab", "u-ana", "u-bo"}, admin)));
        Run r = fails(1, "no reply from the gateway", im("send", "--gateway", url, "--token", ana, "--conv", "c-ab",
                "--cmid", "m-lost", "--timeout", "2", "hi"));
        assertTrue(r.err().contains("resend with --cmid m-lost"), r.toString());
        Matcher m = Pattern.compile("head (\\d+)").matcher(ok(im(with(new String[] {"admin", "conv", "show", "c-ab"}, admin))).out());
        assertTrue(m.find());
        assertEquals("2", m.group(1), "the send was committed although its reply was lost (after the one join of both)");
    }
}
