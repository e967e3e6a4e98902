package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.infra.config.ConfigKeys;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.store.send.SendService;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.File;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The web client served by the gateway, driven in a real headless Chromium (Debian's
 * {@code chromium} + {@code chromium-driver}) against the whole embedded stack: two users'
 * browsers chat both ways and see each other's messages as live pushes, the sender's page shows
 * the other device's delivery state reaching each message, a browser that goes offline catches
 * up in seq order without duplicates, both reconnect by themselves after a gateway restart, a
 * reload restores the local store, and signing out deletes it. A message the server keeps answering {@code INTERNAL} is
 * retried with backoff, then shown as not sent and never resent, until dismissed. Edits and recalls, typing
 * indicators and receipts show on the other browser without a reload. Everything is read
 * from the rendered page. The page's protocol logic is the TypeScript SDK's browser build (client-js/).
 */
@ExtendWith(ImStackExtension.class)
class WebClientIT {
    private static final File CHROMIUM = new File("/usr/bin/chromium");
    private static final File CHROMEDRIVER = new File("/usr/bin/chromedriver");
    private static final Duration WAIT = Duration.ofSeconds(30);   // per step; generous for a loaded 2-core machine
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /** What the page shows for one list item (a stored event, or a pending send with seq -1). */
    record Item(long seq, String kind, String via, String body, Map<String, Boolean> dlv, String edited, String recalled) {}

    @BeforeAll
    static void browserInstalled() {
        // Not a skip: without a browser this test cannot prove anything, so the build must say so.
        assertTrue(CHROMIUM.canExecute() && CHROMEDRIVER.canExecute(),
                "the web client test needs Debian's Chromium and its driver at " + CHROMIUM + " and " + CHROMEDRIVER
                        + ": apt-get install chromium chromium-driver (./run-tests installs them when missing)");
    }

    @Test
    void twoBrowsersChatGoOfflineCatchUpAndSeeDeliveryState(TestStack stack, @TempDir Path tmp) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.SWEEP_MS.name(), "500"))) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-web", "");
            int port = gw.port();
            String site = "http://127.0.0.1:" + port + "/";
            p.awaitRunning();
            long t0 = System.nanoTime();
            List<Page> pages = Page.startAll(tmp, "ana", "bo");
            try (Page ana = pages.get(0); Page bo = pages.get(1)) {
                phase(t0, "browsers started");
                // A wrong token is refused visibly and the page stays signed out.
                ana.open(site);
                ana.signIn("imt_not-a-real-token");
                ana.await("the refused token is reported", x -> x.text("error").contains("BAD_TOKEN")
                        && x.state().equals("signed-out") && x.visible("signin"));

                phase(t0, "bad token refused");
                // Sign in by pasting the token (ana) and by a demo link (bo).
                ana.signIn(fx.anaToken);
                bo.open(site + "#token=" + fx.boToken);
                // Each sees the join events from their own on (bo joined at seq 2: ana's join is not his to see).
                ana.await("online in c-ab with both join events", x -> x.state().equals("online")
                        && x.seqs().equals(List.of(1L, 2L)) && x.text("whoami").startsWith("u-ana / d-ana"));
                bo.await("online in c-ab with his join event", x -> x.state().equals("online")
                        && x.seqs().equals(List.of(2L)) && x.text("whoami").startsWith("u-bo / d-bo"));
                assertTrue(!ana.visible("error"), "the earlier error is cleared after a good sign-in: " + ana.dump());

                phase(t0, "both online");
                // Both ways, live.
                ana.send("hello bo");
                Item hello = bo.awaitMessage("hello bo");
                assertEquals("push", hello.via(), "bo got ana's message as a live push: " + bo.dump());
                bo.send("hi ana");
                Item hi = ana.awaitMessage("hi ana");
                assertEquals("push", hi.via(), "ana got bo's message as a live push: " + ana.dump());
                assertTrue(hi.seq() > hello.seq(), "seqs follow the order of the sends");

                phase(t0, "chatted both ways");
                // Each page shows the other device holding the message (its cursor reached the seq).
                ana.awaitDelivered("hello bo", "d-bo", true);
                bo.awaitDelivered("hi ana", "d-ana", true);

                phase(t0, "delivery state shown");
                // bo goes offline; ana keeps sending; ana's page shows d-bo does not have them.
                bo.click("offline");
                bo.await("offline", x -> x.state().equals("offline"));
                Await.until(WAIT, () -> gw.openConnections() == 1, "only ana's socket is open at the gateway");
                List<String> offline = List.of("while you were away 1", "while you were away 2", "while you were away 3");
                for (String m : offline) ana.send(m);
                long last = ana.awaitMessage(offline.get(2)).seq();
                ana.await("delivery state read after the last send",
                        x -> x.attr("delivery-summary", "data-head").equals(Long.toString(last)));
                for (String m : offline) assertEquals(false, ana.message(m).dlv().get("d-bo"), "d-bo is offline: " + ana.dump());
                assertEquals(hi.seq(), fx.count("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c-ab'"));

                phase(t0, "offline sends not delivered");
                // bo comes back: catches up in seq order, once each; ana sees them delivered.
                bo.click("offline");
                List<String> expected = new ArrayList<>(List.of("hello bo", "hi ana"));
                expected.addAll(offline);
                bo.await("caught up with every message", x -> x.bodies().equals(expected));
                for (String m : offline) ana.awaitDelivered(m, "d-bo", true);

                phase(t0, "caught up");
                // The gateway restarts on the same port: both pages show it and reconnect by themselves;
                // a message committed meanwhile reaches bo by sub + sync.
                gw.close();
                for (Page x : List.of(ana, bo)) x.await("reconnecting", y -> y.state().equals("reconnecting"));
                new SendService(stack.dataSource(), Faults.parse(""), Clock.systemUTC())
                        .send(new DevicePrincipal("u-ana", "d-ana", 1), "c-ab", "while-down-1", "sent while the gateway was down");
                expected.add("sent while the gateway was down");
                Gateway again = Gateway.start(GatewayConfig.from(p.settings.with(ConfigKeys.GATEWAY_ID, "gw-web")
                        .with(ConfigKeys.GATEWAY_PORT, Integer.toString(port))), stack.dataSource(), Faults.parse(""),
                        Clock.systemUTC());
                p.gateways.add(again);
                for (Page x : List.of(ana, bo)) {
                    x.await("back online with every message", y -> y.state().equals("online") && y.bodies().equals(expected));
                }
                ana.awaitDelivered("sent while the gateway was down", "d-bo", true);

                phase(t0, "reconnected after gateway restart");
                // A reload keeps the local store: same list, nothing twice.
                List<Long> before = bo.seqs();
                bo.driver.navigate().refresh();
                bo.await("reloaded, still signed in, same messages", x -> x.state().equals("online")
                        && x.seqs().equals(before) && x.bodies().equals(expected));
                assertTrue(bo.items().stream().filter(i -> i.seq() >= 0).allMatch(i -> i.via().equals("store") || i.via().equals("push")),
                        "after a reload the events come from the local store: " + bo.dump());

                phase(t0, "reloaded");
                long head = fx.head("c-ab");
                Await.until(WAIT, () -> fx.count("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c-ab'") == head
                        && fx.count("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-ana' AND conv_id = 'c-ab'") == head,
                        "both devices' cursors at the head " + head);

                phase(t0, "cursors at head");
                // Signing out deletes the device's local store (IndexedDB), once the SDK closed it.
                assertTrue(bo.databases().stream().anyMatch(n -> n.startsWith("im.web.u-bo.d-bo.")), "bo's store exists: " + bo.databases());
                bo.click("signout");
                bo.await("signed out, the local store deleted", x -> x.state().equals("signed-out")
                        && x.databases().stream().noneMatch(n -> n.startsWith("im.web.")));
            }
        }
    }

    @Test
    void aMessageAnsweredInternalIsRetriedWithBackoffThenShownAsNotSentNeverResentUntilDismissed(TestStack stack, @TempDir Path tmp)
            throws Exception {
        Fixture fx = new Fixture(stack);
        // Five failures, then the fault is spent: a sixth attempt of the message would commit it.
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            String site = site(p, "gw-web-internal", "send.before_insert:fail:0:5");
            try (Page ana = Page.startAll(tmp, "ana").get(0)) {
                ana.open(site + "#token=" + fx.anaToken);
                ana.await("online", x -> x.state().equals("online") && x.seqs().equals(List.of(1L, 2L)));
                long t0 = System.nanoTime();
                ana.send("hits a bug");
                ana.await("shown as not sent after five INTERNAL answers", x -> x.failedText().contains("gave up after 5 attempts"));
                long tookMs = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(tookMs >= 500 + 1000 + 2000 + 4000, "four retries, each after its backoff: " + tookMs + " ms");
                assertTrue(ana.text("error").contains("INTERNAL"), ana.dump());
                // A later message commits (the fault is spent), and the failed one is still not resent, even after a reload.
                ana.send("after the bug");
                assertEquals(3, ana.awaitMessage("after the bug").seq(), "the failed attempts consumed no seq");
                ana.driver.navigate().refresh();
                ana.await("reloaded: the failed message is still shown as not sent",
                        x -> x.state().equals("online") && x.failedText().contains("gave up"));
                // Dismissing it removes it for good: a reload does not bring it back.
                ana.driver.findElement(By.cssSelector("#messages li.failed button.dismiss")).click();
                ana.await("the dismissed message is gone", x -> x.failedText().isEmpty());
                ana.driver.navigate().refresh();
                ana.await("reloaded: the dismissed message stays gone", x -> x.state().equals("online")
                        && x.bodies().equals(List.of("after the bug")) && x.failedText().isEmpty());
            }
        }
        assertEquals(1, fx.messages(), "only the later message was stored: the failed one was never attempted a sixth time");
    }

    /**
     * Unread badges follow the user's read cursor on every device (docs/protocol.md, "Read state and
     * unread counts"): cy's messages raise ana's badge and the title's total on both of ana's
     * browsers; opening the conversation on one reads it and brings the other's badge down without a
     * reload; ana's own message raises nothing; a reload shows the same counts.
     */
    @Test
    void unreadBadgesComeDownOnEveryDeviceOfTheUserWhenOneReads(TestStack stack, @TempDir Path tmp) throws Exception {
        Fixture fx = new Fixture(stack);
        String ana2 = fx.dir.registerDevice("u-ana", "d-ana2").token();
        fx.dir.createConversation("c-ac", "direct", List.of("u-ana", "u-cy"));
        SendService cySends = new SendService(stack.dataSource(), Faults.parse(""), Clock.systemUTC());
        DevicePrincipal cy = new DevicePrincipal("u-cy", "d-cy", 1);
        try (Pipeline p = new Pipeline(stack, Map.of()); cySends) {
            String site = site(p, "gw-web-read", "");
            List<Page> pages = Page.startAll(tmp, "ana-laptop", "ana-phone");
            try (Page laptop = pages.get(0); Page phone = pages.get(1)) {
                laptop.open(site + "#token=" + fx.anaToken);
                phone.open(site + "#token=" + ana2);
                for (Page x : pages) {
                    x.await("online, c-ab open", y -> y.state().equals("online") && y.attr("messages", "data-conv").equals("c-ab"));
                }
                cySends.send(cy, "c-ac", "cy-1", "hello ana");
                cySends.send(cy, "c-ac", "cy-2", "are you there?");
                for (Page x : pages) {
                    x.await("c-ac shows 2 unread, the total 2, the title (2)", y -> y.unread("c-ac") == 2
                            && y.attr("unread-total", "data-unread").equals("2") && y.title().startsWith("(2) "));
                }
                laptop.openConv("c-ac");
                laptop.await("read on the laptop: no unread", y -> y.unread("c-ac") == 0 && !y.title().startsWith("("));
                phone.await("the phone's badge came down without a reload", y -> y.unread("c-ac") == 0
                        && y.attr("unread-total", "data-unread").equals("0") && !y.title().startsWith("("));
                Await.until(WAIT, () -> fx.count("SELECT COALESCE((SELECT read_seq FROM read_cursors WHERE user_id = 'u-ana'"
                        + " AND conv_id = 'c-ac'), 0)") == fx.head("c-ac"), "ana's read cursor at the head of c-ac");
                laptop.send("yes, here");
                laptop.awaitMessage("yes, here");
                laptop.openConv("c-ab");   // c-ac no longer shown: what comes next stays unread
                cySends.send(cy, "c-ac", "cy-3", "great");
                for (Page x : pages) {
                    x.await("cy's next message counts 1 (ana's own did not count)", y -> y.unread("c-ac") == 1 && y.title().startsWith("(1) "));
                }
                phone.driver.navigate().refresh();
                phone.await("reloaded: the same counts", y -> y.state().equals("online") && y.unread("c-ac") == 1
                        && y.unread("c-ab") == 0 && y.attr("unread-total", "data-unread").equals("1"));
                phone.openConv("c-ac");
                laptop.await("read on the phone: the laptop's badge came down", y -> y.unread("c-ac") == 0 && !y.title().startsWith("("));
            }
        }
    }

    /**
     * Edit and recall (docs/protocol.md, "Edit and recall"): ana edits her message and bo's page shows
     * the new text marked "(edited)" without a reload; she recalls it and both pages show "message
     * recalled" with no text; after bo reloads (his local store) still the tombstone, and the original
     * text never again.
     */
    @Test
    void anEditAndThenARecallShowOnTheOtherBrowserLiveAndAfterAReloadWithoutTheOriginalText(TestStack stack, @TempDir Path tmp)
            throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            String site = site(p, "gw-web-edit", "");
            List<Page> pages = Page.anaAndBo(tmp, site, fx);
            try (Page ana = pages.get(0); Page bo = pages.get(1)) {
                for (Page x : pages) x.await("online in c-ab", y -> y.state().equals("online") && y.attr("messages", "data-conv").equals("c-ab"));
                ana.send("meet at 5");
                long seq = bo.awaitMessage("meet at 5").seq();
                assertTrue(bo.actions(seq).isEmpty(), "bo has no Edit or Recall on ana's message: " + bo.dump());
                ana.await("Edit and Recall on her own message", x -> x.actions(seq).equals(List.of("Edit", "Recall")));

                ana.clickAction(seq, "edit");
                ana.await("the composer holds the text to edit", x -> x.value("body").equals("meet at 5") && x.visible("edit-bar"));
                ana.driver.findElement(By.id("body")).clear();
                ana.send("meet at 6");
                for (Page x : pages) {
                    x.await("the edited text in place, marked (edited)", y -> y.bodies().equals(List.of("meet at 6 (edited)"))
                            && y.items().stream().anyMatch(i -> i.seq() == seq && "true".equals(i.edited())));
                }

                ana.clickAction(seq, "recall");
                for (Page x : pages) {
                    x.await("the tombstone, no text", y -> y.bodies().equals(List.of("message recalled"))
                            && y.items().stream().anyMatch(i -> i.seq() == seq && "true".equals(i.recalled())));
                }
                assertTrue(ana.actions(seq).isEmpty(), "no Edit or Recall on a recalled message: " + ana.dump());
                bo.driver.navigate().refresh();
                bo.await("reloaded: still the tombstone", y -> y.state().equals("online") && y.bodies().equals(List.of("message recalled")));
                String html = bo.driver.getPageSource();
                assertTrue(!html.contains("meet at 5") && !html.contains("meet at 6"), "no text of the recalled message on bo's page: " + bo.dump());
                Item shown = bo.items().stream().filter(i -> i.seq() == seq).findFirst().orElseThrow();
                assertEquals("true", shown.recalled(), bo.dump());
            }
        }
    }

    /**
     * Typing and receipts (docs/protocol.md, "Typing" and "Receipts") in a group of ana, bo and cy: bo types
     * and ana's page shows "u-bo is typing…" until it expires; ana's message shows "seen by 0 of 2" while bo
     * looks at another conversation, and once bo opens the group (read) "seen by 1 of 2 · delivered 1 of 2" on
     * ana's page without a reload (cy's device never connects).
     */
    @Test
    void typingShowsOnTheOtherBrowserAndReceiptsCountWhoReadTheMessage(TestStack stack, @TempDir Path tmp) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("g-abc", "group", List.of("u-ana", "u-bo", "u-cy"));
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            String site = site(p, "gw-web-typing", "");
            List<Page> pages = Page.anaAndBo(tmp, site, fx);
            try (Page ana = pages.get(0); Page bo = pages.get(1)) {
                for (Page x : pages) {
                    x.await("online", y -> y.state().equals("online") && y.unread("g-abc") == 0);
                    x.openConv("g-abc");
                    x.await("g-abc open", y -> y.attr("messages", "data-conv").equals("g-abc"));
                }
                bo.driver.findElement(By.id("body")).sendKeys("hel");
                ana.await("bo is typing", x -> x.text("typing").equals("u-bo is typing…"));
                assertEquals("", bo.text("typing"), "never on the typer's own page");
                ana.await("the indicator expired", x -> x.text("typing").isEmpty());

                bo.openConv("c-ab");   // bo looks elsewhere: ana's message stays unread
                bo.await("c-ab open", y -> y.attr("messages", "data-conv").equals("c-ab"));
                ana.send("lunch at noon?");
                long seq = ana.awaitMessage("lunch at noon?").seq();
                ana.await("not seen yet", x -> x.receipt(seq).startsWith("seen by 0 of 2"));
                bo.await("unread in g-abc", y -> y.unread("g-abc") == 1);
                bo.openConv("g-abc");
                bo.awaitMessage("lunch at noon?");
                ana.await("seen by bo, delivered to his device", x -> x.receipt(seq).equals("seen by 1 of 2 · delivered 1 of 2"));
                assertEquals("", bo.receipt(seq), "no receipt under another user's message");
            }
        }
    }

    /** Starts a gateway (with `faults`) in the pipeline, waits until everything runs; the web client's address. */
    private static String site(Pipeline p, String gateway, String faults) {
        Gateway gw = p.addGateway(gateway, faults);
        p.awaitRunning();
        return "http://127.0.0.1:" + gw.port() + "/";
    }

    private static void phase(long t0, String what) {
        System.out.printf("web client IT: %-36s at %5d ms%n", what, (System.nanoTime() - t0) / 1_000_000);
    }

    /** One browser with a fresh profile, and what its page shows. */
    static final class Page implements AutoCloseable {
        final String name;
        final ChromeDriver driver;

        Page(String name, Path profile) {
            this.name = name;
            ChromeDriverService service = new ChromeDriverService.Builder()
                    .usingDriverExecutable(CHROMEDRIVER)   // never Selenium Manager: nothing is downloaded
                    .usingAnyFreePort()
                    .build();
            ChromeOptions o = new ChromeOptions();
            o.setBinary(CHROMIUM);
            o.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--disable-extensions", "--disable-background-timer-throttling",
                    "--disable-renderer-backgrounding", "--user-data-dir=" + profile.toAbsolutePath(), "--window-size=1200,900");
            this.driver = new ChromeDriver(service, o);
        }

        /** Starts the browsers side by side (each takes seconds); none is left running if one fails. */
        static List<Page> startAll(Path tmp, String... names) {
            List<CompletableFuture<Page>> starting = new ArrayList<>();
            for (String n : names) starting.add(CompletableFuture.supplyAsync(() -> new Page(n, tmp.resolve(n))));
            try {
                CompletableFuture.allOf(starting.toArray(CompletableFuture[]::new)).join();
            } catch (CompletionException e) {
                for (CompletableFuture<Page> f : starting) f.thenAccept(Page::close);
                throw e;
            }
            return starting.stream().map(CompletableFuture::join).toList();
        }

        /** Browsers for ana and bo, each opening the site signed in by a demo link. */
        static List<Page> anaAndBo(Path tmp, String site, Fixture fx) {
            List<Page> pages = startAll(tmp, "ana", "bo");
            try {
                pages.get(0).open(site + "#token=" + fx.anaToken);
                pages.get(1).open(site + "#token=" + fx.boToken);
            } catch (RuntimeException e) {
                pages.forEach(Page::close);
                throw e;
            }
            return pages;
        }

        void open(String url) {
            driver.get(url);
        }

        void signIn(String token) {
            driver.findElement(By.id("token")).sendKeys(token);
            driver.findElement(By.id("signin-button")).click();
        }

        void send(String body) {
            driver.findElement(By.id("body")).sendKeys(body);
            driver.findElement(By.id("send")).click();
        }

        void click(String id) {
            driver.findElement(By.id(id)).click();
        }

        /** The labels of the action buttons (Edit, Recall) on the message with this seq. */
        @SuppressWarnings("unchecked")
        List<String> actions(long seq) {
            return (List<String>) js("return Array.from(document.querySelectorAll(\"#messages li[data-seq='\" + arguments[0] + \"'] .action\"))"
                    + ".map(b => b.textContent);", String.valueOf(seq));
        }

        /** Clicks the action (`edit`, `recall`) of the message with this seq. */
        void clickAction(long seq, String action) {
            driver.findElement(By.cssSelector("#messages li[data-seq='" + seq + "'] .action." + action)).click();
        }

        String value(String id) {
            return String.valueOf(js("var e = document.getElementById(arguments[0]); return e ? e.value : '';", id));
        }

        /** Opens a conversation from the list (clicked in the page: the list may be redrawn between a find and a click). */
        void openConv(String conv) {
            await(conv + " listed", x -> Boolean.TRUE.equals(x.js("var b = document.querySelector(\"#convs button[data-conv='\" + arguments[0] + \"']\");"
                    + " if (b) b.click(); return !!b;", conv)));
        }

        /** The unread badge of a conversation in the list (-1 when it is not listed). */
        long unread(String conv) {
            Object v = js("var b = document.querySelector(\"#convs button[data-conv='\" + arguments[0] + \"']\"); return b ? b.dataset.unread : '-1';", conv);
            return Long.parseLong(String.valueOf(v));
        }

        String title() {
            return driver.getTitle();
        }

        String state() {
            return attr("status", "data-state");
        }

        String text(String id) {
            return (String) js("var e = document.getElementById(arguments[0]); return e ? e.textContent : '';", id);
        }

        String attr(String id, String attribute) {
            Object v = js("var e = document.getElementById(arguments[0]); return e && e.getAttribute(arguments[1]) || '';", id, attribute);
            return v == null ? "" : v.toString();
        }

        boolean visible(String id) {
            return Boolean.TRUE.equals(js("var e = document.getElementById(arguments[0]); return !!e && e.offsetParent !== null;", id));
        }

        /** The receipt line under the message with this seq ('' when none is shown). */
        String receipt(long seq) {
            Object v = js("var r = document.querySelector(\"#messages li[data-seq='\" + arguments[0] + \"'] .rcpt\"); return r ? r.textContent : '';",
                    String.valueOf(seq));
            return v == null ? "" : v.toString();
        }

        /** Every list item of the open conversation, as rendered, top to bottom. */
        List<Item> items() {
            String json = (String) js("return JSON.stringify(Array.from(document.querySelectorAll('#messages > li')).map(li => ({"
                    + " seq: li.dataset.seq ? Number(li.dataset.seq) : -1, kind: li.dataset.kind || 'pending',"
                    + " via: li.dataset.via || '', body: (li.querySelector('.body') || {}).textContent || '',"
                    + " edited: li.dataset.edited || '', recalled: li.dataset.recalled || '',"
                    + " dlv: Object.fromEntries(Array.from(li.querySelectorAll('.dev')).map(d => [d.dataset.device, d.dataset.delivered === 'true']))"
                    + " })));");
            try {
                return JSON.readValue(json, new TypeReference<List<Item>>() {});
            } catch (java.io.IOException e) {
                throw new AssertionError(name + ": unreadable list " + json, e);
            }
        }

        List<Long> seqs() {
            return items().stream().map(Item::seq).toList();
        }

        /** Bodies of the messages in the order shown (pending sends included, at the end). */
        List<String> bodies() {
            return items().stream().filter(i -> i.kind().equals("msg") || i.kind().equals("pending")).map(Item::body).toList();
        }

        Item message(String body) {
            List<Item> found = items().stream().filter(i -> i.kind().equals("msg") && i.body().equals(body)).toList();
            assertEquals(1, found.size(), name + ": exactly one stored copy of '" + body + "': " + dump());
            return found.get(0);
        }

        Item awaitMessage(String body) {
            await("shows '" + body + "' once, with its seq",
                    x -> x.items().stream().filter(i -> i.kind().equals("msg") && i.body().equals(body)).count() == 1);
            return message(body);
        }

        void awaitDelivered(String body, String device, boolean delivered) {
            await("'" + body + "' marked " + (delivered ? "delivered" : "not delivered") + " to " + device,
                    x -> x.items().stream().anyMatch(i -> i.kind().equals("msg") && i.body().equals(body)
                            && Boolean.valueOf(delivered).equals(i.dlv().get(device))));
        }

        void await(String what, Predicate<Page> condition) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!condition.test(this)) {
                if (System.nanoTime() > deadline) throw new AssertionError(name + ": not within " + WAIT + ": " + what + "\n" + dump());
                LockSupport.parkNanos(100_000_000);
            }
        }

        /** The status line of the messages shown as not sent ('' when there are none). */
        String failedText() {
            Object v = js("return Array.from(document.querySelectorAll('#messages li.failed .meta')).map(e => e.textContent).join('|');");
            return v == null ? "" : v.toString();
        }

        /** The names of this page's IndexedDB databases. */
        List<String> databases() {
            Object v = ((JavascriptExecutor) driver).executeAsyncScript("var done = arguments[arguments.length - 1];"
                    + " indexedDB.databases().then(d => done(JSON.stringify(d.map(x => x.name))), e => done('[\"error: ' + e + '\"]'));");
            try {
                return JSON.readValue(String.valueOf(v), new TypeReference<List<String>>() {});
            } catch (java.io.IOException e) {
                throw new AssertionError(name + ": unreadable database list " + v, e);
            }
        }

        /** What the user sees, for failure messages. */
        String dump() {
            return name + " page: status=" + state() + " '" + text("status") + "' error='" + text("error")
                    + "' delivery='" + text("delivery-summary") + "' typing='" + text("typing") + "' receipts="
                    + js("return Array.from(document.querySelectorAll('#messages .rcpt')).map(e => e.textContent).join('|');")
                    + " items=" + items();
        }

        private Object js(String script, Object... args) {
            return ((JavascriptExecutor) driver).executeScript(script, args);
        }

        @Override
        public void close() {
            WebDriver d = driver;
            d.quit();
        }
    }
}
