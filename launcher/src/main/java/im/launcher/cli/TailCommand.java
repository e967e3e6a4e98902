package im.launcher.cli;

import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.ConvState;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Hint;
import im.protocol.Limits;
import im.protocol.ReadState;
import im.protocol.ServerFrame;
import im.protocol.Sync;
import im.protocol.Synced;
import im.protocol.TypingPush;
import im.protocol.Unread;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code im tail}: follows one conversation as a device would. It subscribes, syncs the history
 * from {@code --from} (default: the first seq this device has not acked), then prints live pushes;
 * a gap or a {@code hint} makes it sync again. Printing a line is this device's "durable store":
 * after each batch it acks the contiguous cursor of what it printed, so {@code im lag} shows the
 * device caught up. It never acks what it did not print: with {@code --from} above the device's
 * cursor + 1 (events in between not shown) or {@code --no-ack} it only reads. An {@code unread}
 * push (another device of the user read the conversation) and a {@code typing} push (another member
 * is typing) are printed as lines of their own: not events, neither counted nor acked.
 */
@Command(name = "tail", mixinStandardHelpOptions = true,
        description = "Print a conversation's events as a device: history from --from, then live pushes, acking what was printed.")
public final class TailCommand implements Callable<Integer> {
    private static final Object STOP = new Object();

    @Mixin
    DeviceLogin login;

    @Option(names = "--conv", required = true, paramLabel = "CONV", description = "Conversation id.")
    String conv;

    @Option(names = "--from", paramLabel = "SEQ",
            description = "First seq to print (default: this device's delivered cursor + 1; 1 = the whole visible history).")
    Long from;

    @Option(names = "--no-ack", description = "Only read: never move this device's delivered cursor.")
    boolean noAck;

    @Option(names = {"-n", "--count"}, paramLabel = "N", description = "Stop after printing N events (default: follow until Ctrl-C).")
    Long count;

    @Option(names = "--json", description = "Print each event as its JSON object (the wire format's ev), and each unread or typing push as its wire frame, instead of text.")
    boolean json;

    private PrintWriter out;
    private PrintWriter err;
    private DeviceSocket socket;
    /** Every visible event up to here was printed (or lies below --from). */
    private long cursor;
    /** The device's delivered cursor as the server last reported it. */
    private long acked;
    private boolean acking;
    private long printed;

    @Override
    public Integer call() {
        out = login.gateway.out();
        err = login.gateway.err();
        if (from != null && from < 0) throw login.gateway.usage("--from: must be 0 or more");
        if (count != null && count < 1) throw login.gateway.usage("--count: must be at least 1");
        try (DeviceSocket s = login.connect(err)) {
            socket = s;
            ConvState followed = s.subscribe(c -> c.conv().equals(conv));
            long delivered = followed == null ? 0 : followed.delivered();
            long first = from != null ? Math.max(1, from) : delivered + 1;
            cursor = first - 1;
            acked = delivered;
            acking = !noAck && first <= delivered + 1;   // acks must be contiguous from what the server has
            String device = s.authed().user() + " / " + s.authed().device();
            err.println("subscribed as " + device + ", following " + conv + " from seq " + first
                    + (acking ? " (acking; delivered cursor " + delivered + ")"
                       : noAck ? " (--no-ack: not acking)"
                       : " (not acking: seqs " + (delivered + 1) + ".." + (first - 1) + " are not shown)"));
            err.flush();
            try (StopHook ctrlC = new StopHook("im-tail-stop", () -> s.inbox().add(STOP))) {
                follow(s);
            }
            err.println("stopped after " + printed + " events; " + s.authed().device() + " delivered cursor in " + conv + ": " + acked);
            err.flush();
        }
        return 0;
    }

    private void follow(DeviceSocket s) {
        if (!sync()) return;
        ack();
        while (true) {
            Object f;
            try {
                f = s.inbox().take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (f == STOP) return;
            if (f instanceof DeviceSocket.Closed c) throw new CliException(c.why());
            if (f instanceof EventPush p && p.ev().conv().equals(conv)) {
                Event e = p.ev();
                if (e.seq() == cursor + 1) {
                    if (!print(e)) return;
                } else if (e.seq() > cursor + 1 && !sync()) {   // a gap: lost push or events this user cannot see
                    return;
                }
            } else if (f instanceof Hint h && h.conv().equals(conv) && h.head() > cursor) {
                if (!sync()) return;
            } else if (f instanceof Unread u && u.conv().equals(conv)) {
                printUnread(u);
            } else if (f instanceof TypingPush t && t.conv().equals(conv)) {
                printNotice(t, t.user() + " is typing in " + t.conv());
            } else if (f instanceof ErrorFrame e) {
                err.println("gateway: " + e.code().wire() + ": " + e.msg());
                err.flush();
            }
            if (s.inbox().isEmpty()) ack();   // one ack per burst, like a device coalescing its acks
        }
    }

    /** Pages through the visible events after the cursor; false once --count is reached. */
    private boolean sync() {
        while (true) {
            Synced page = (Synced) socket.request(new Sync(socket.nextRid(), conv, cursor, Limits.SYNC_MAX_LIMIT));
            for (Event e : page.events()) {
                if (e.seq() <= cursor) continue;
                if (!print(e)) return false;
            }
            if (!page.more()) {
                cursor = Math.max(cursor, page.head());   // every visible event up to the head was in the pages
                return true;
            }
        }
    }

    /** Prints one event and moves the cursor to it; false (after acking) once --count is reached. */
    private boolean print(Event e) {
        out.println(json ? AdminClient.json(e) : e.seq() + "  " + Instant.ofEpochMilli(e.at()) + "  " + e.sender() + "  " + text(e));
        out.flush();
        cursor = e.seq();
        printed++;
        if (count != null && printed >= count) {
            ack();
            return false;
        }
        return true;
    }

    /**
     * Prints the read state another device of this user left (an {@code unread} push): not an
     * event, so it neither moves the cursor nor counts towards {@code --count}.
     */
    private void printUnread(Unread u) {
        ReadState r = u.state();
        printNotice(u, "unread " + u.conv() + ": " + r.unread() + " (read " + r.read() + ", head " + r.head() + ")");
    }

    /** A pushed frame that is not an event ({@code unread}, {@code typing}): {@code text}, or the frame with --json. */
    private void printNotice(ServerFrame f, String text) {
        out.println(json ? DeviceSocket.json(f) : text);
        out.flush();
    }

    /** Acks the contiguous cursor once it is printed (flushed), if it moved. */
    private void ack() {
        if (!acking || cursor <= acked) return;
        out.flush();
        Acked a = (Acked) socket.request(new Ack(socket.nextRid(), conv, cursor));
        acked = a.delivered();
    }

    /**
     * What an event says, on one line: the body (newlines as \n), or {@code * joined} /
     * {@code * left}; a bulk join, {@code * joined with N others} (the list is not sent to devices);
     * an edit {@code * edited #REF: new text}, a recall {@code * recalled #REF}; a recalled message
     * (a tombstone) {@code (recalled)}.
     */
    static String text(Event e) {
        if (Event.JOIN.equals(e.kind()) && e.count() > 1) return "* joined with " + (e.count() - 1) + " others";
        if (Event.EDIT.equals(e.kind())) return "* edited #" + e.ref() + (e.recalled() ? " (recalled)" : ": " + oneLine(e.body()));
        if (Event.RECALL.equals(e.kind())) return "* recalled #" + e.ref();
        if (e.recalled()) return "(recalled)";
        return text(e.kind(), e.body());
    }

    static String text(String kind, String body) {
        return switch (kind) {
            case Event.JOIN -> "* joined";
            case Event.LEAVE -> "* left";
            default -> oneLine(body);
        };
    }

    /**
     * A body on one line that cannot drive the terminal: newlines, tabs and backslashes escaped as
     * in Java, and every other control character (ESC, C1, DEL) and format character (bidi
     * overrides such as U+202E, zero-width characters) as {@code \\uXXXX}.
     */
    static String oneLine(String body) {
        if (body == null) return "";
        StringBuilder b = new StringBuilder(body.length());
        for (char c : body.toCharArray()) {
            switch (c) {
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\\' -> b.append("\\\\");
                default -> {
                    int type = Character.getType(c);
                    if (type == Character.CONTROL || type == Character.FORMAT) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        return b.toString();
    }
}
