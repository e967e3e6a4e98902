package im.reliability;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.PendingSend;
import im.client.api.ReceivedEvent;
import im.client.api.SentAck;
import im.protocol.Acked;
import im.protocol.CaughtUp;
import im.protocol.ConvState;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import im.protocol.ServerFrame;
import im.protocol.Subbed;
import im.protocol.Synced;
import im.protocol.Unread;
import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The campaign's hands on its devices' SDK instances: opens each behind its {@link WireTap}
 * (recording what the socket was told), and carries out the nemesis' client faults: disconnect,
 * process restart from the state directory, reinstall through the admin API.
 */
final class DeviceDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<CastDevice> devices;
    private final List<String> convs;
    private final int[] gatewayPorts;
    private final AdminHttp admin;
    private final List<String> problems;

    DeviceDriver(List<CastDevice> devices, List<String> convs, int[] gatewayPorts, AdminHttp admin, List<String> problems) {
        this.devices = devices;
        this.convs = convs;
        this.gatewayPorts = gatewayPorts;
        this.admin = admin;
        this.problems = problems;
    }

    void openClient(CastDevice d) throws IOException {
        d.tap = new WireTap(d.id, new java.net.InetSocketAddress("127.0.0.1", gatewayPorts[d.gateway]), new WireTap.Sink() {
            @Override
            public void frame(int epoch, ServerFrame f, long at, long requestAt) {
                record(d, epoch, f, at, requestAt);
            }

            @Override
            public void undecodable(int epoch, String text, long at) {
                recordRawReadState(d, epoch, text, at);
            }
        });
        startClient(d);
    }

    /** A new SDK instance on the device's state directory (as a restarted process), connected. */
    void startClient(CastDevice d) throws IOException {
        ImClient c = ImClient.open(ClientOptions.of(d.tap.uri(), d.token, d.stateDir));
        CastDevice.Install rec = d.install(d.epoch);
        c.addListener(new ClientListener() {
            @Override
            public void onSent(SentAck ack) {
                d.acked.putIfAbsent(ack.cmid(), ack.seq());
                d.replies.computeIfAbsent(ack.cmid(), k -> new CopyOnWriteArrayList<>())
                        .add(new History.SentReply(ack.seq(), ack.dup(), System.currentTimeMillis()));
            }

            @Override
            public void onEvent(ReceivedEvent e) {
                rec.storedEvents.add(new History.CommittedEvent(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(),
                        e.body(), null, e.ref()));
            }
        });
        d.client = c;
        connectWithRetry(d, 60_000);
    }

    static History.CommittedEvent committedOf(Event e) {
        return new History.CommittedEvent(e.conv(), e.seq(), e.kind(), e.mid(), e.sender(), e.cmid(), e.body(), null, e.ref());
    }

    /**
     * What the device's socket received: event frames (pushed, or in a {@code synced} or {@code caughtup}
     * page with when its request left) for visibility and content, cursor replies for their history.
     */
    private void record(CastDevice d, int epoch, ServerFrame f, long at, long requestAt) {
        if (f instanceof EventPush p) {
            d.install(epoch).seen.add(new History.Seen(History.Source.PUSH, at, committedOf(p.ev())));
        } else if (f instanceof Synced s) {
            for (Event e : s.events()) d.install(epoch).seen.add(new History.Seen(History.Source.SYNC, at, committedOf(e), requestAt));
        } else if (f instanceof CaughtUp c) {
            for (Event e : c.events()) d.install(epoch).seen.add(new History.Seen(History.Source.CATCHUP, at, committedOf(e), requestAt));
        } else if (f instanceof Acked a) {
            d.install(epoch).cursorReports.add(new History.CursorReport(a.conv(), a.delivered(), History.CursorSource.ACKED));
        } else if (f instanceof Subbed s) {
            for (ConvState c : s.convs()) {
                d.install(epoch).cursorReports.add(new History.CursorReport(c.conv(), c.delivered(), History.CursorSource.SUBBED));
                readReport(d, epoch, c.conv(), c.readState(), History.ReadSource.SUBBED, at);
            }
        } else if (f instanceof ReadAck r) {
            readReport(d, epoch, r.conv(), r.state(), History.ReadSource.READACK, at);
        } else if (f instanceof Unread u) {
            readReport(d, epoch, u.conv(), u.state(), History.ReadSource.UNREAD, at);
        }
    }

    private static void readReport(CastDevice d, int epoch, String conv, ReadState s, History.ReadSource source, long at) {
        d.install(epoch).readReports.add(new History.ReadReport(conv, s.read(), s.unread(), s.head(), source, at));
    }

    /**
     * A read state frame the codec refused (a negative count is one): its numbers as sent, so the
     * checker judges what the server said rather than losing it to the decoder.
     */
    private void recordRawReadState(CastDevice d, int epoch, String text, long at) {
        JsonNode f;
        try {
            f = JSON.readTree(text);
        } catch (IOException e) {
            return;   // not JSON at all: already a tap problem
        }
        String t = f.path("t").asText();
        History.ReadSource source = switch (t) {
            case "readack" -> History.ReadSource.READACK;
            case "unread" -> History.ReadSource.UNREAD;
            case "subbed" -> History.ReadSource.SUBBED;
            default -> null;
        };
        if (source == null) return;
        for (JsonNode c : source == History.ReadSource.SUBBED ? f.path("convs") : List.of(f)) {
            d.install(epoch).readReports.add(new History.ReadReport(c.path("conv").asText(), c.path("read").asLong(),
                    c.path("unread").asLong(), c.path("head").asLong(), source, at));
        }
    }

    /** Old installs still connected this long after their reinstall (the revocation bound is 2 s). */
    final AtomicLong staleStillOpen = new AtomicLong();

    /**
     * The nemesis' device reinstall, through the admin API: the old install's client is left
     * connected (the platform must close it with 4003 within the bound, and refuse its reads) and
     * watched for 3 s; then it is closed and the device starts fresh as a new install (new token,
     * empty state directory), as a user who reinstalled the app.
     */
    String reinstall(int i) {
        CastDevice d = devices.get(i);
        if (d.parked) return d.id + " parked";
        JsonNode r;
        try {
            var resp = admin.send(0, "POST", "/admin/devices/" + d.id + "/reinstall", null);
            if (resp.statusCode() != 200) return d.id + " reinstall answered " + resp.statusCode() + " " + resp.body();
            r = JSON.readTree(resp.body());
        } catch (IOException e) {
            return d.id + " reinstall failed: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return d.id + " reinstall interrupted";
        }
        long at = System.currentTimeMillis();
        ImClient old = d.client;
        CastDevice.Install rec = d.install(d.epoch);
        rec.retiredAt = at;
        while (old.isConnected() && System.currentTimeMillis() < at + 3_000) LockSupport.parkNanos(50_000_000L);
        boolean stillOpen = old.isConnected();
        if (stillOpen) staleStillOpen.incrementAndGet();
        StoreSnapshot snap = StoreSnapshot.read(convs, old::cursor, old::events, e -> e.getValue() > 0);
        Set<String> pending = new HashSet<>();
        for (PendingSend p : old.pending()) pending.add(p.cmid());
        rec.stored = snap.stored();
        rec.local = snap.local();
        rec.bodies = snap.bodies();
        rec.pending = pending;
        int epoch = r.get("epoch").asInt();
        d.token = r.get("token").asText();
        d.stateDir = d.stateDir.resolveSibling(d.id + "-e" + epoch);
        d.epoch = epoch;
        old.close();
        try {
            startClient(d);
        } catch (IOException e) {
            problems.add(d.id + " new install could not start: " + e);
        }
        return d.id + " epoch " + epoch + (stillOpen ? ", old install STILL CONNECTED 3 s later" : ", old install closed by the server");
    }

    /** The nemesis' client restart: the SDK closed and opened again from its state directory, like a restarted process. */
    void restartClient(int i) {
        CastDevice d = devices.get(i);
        if (d.parked) return;
        d.client.close();
        try {
            startClient(d);
        } catch (IOException e) {
            problems.add(d.id + " could not be reopened from " + d.stateDir + ": " + e);
        }
    }

    void connectWithRetry(CastDevice d, long millis) {
        long deadline = System.currentTimeMillis() + millis;
        while (true) {
            try {
                d.client.connect();
                return;
            } catch (IOException e) {
                if (System.currentTimeMillis() > deadline) {
                    problems.add(d.id + " could not connect: " + e);
                    return;
                }
                LockSupport.parkNanos(200_000_000L);
            }
        }
    }

    /** The nemesis' client fault: disconnect device {@code i}, stay away 0.5–2.5 s, connect again. */
    void bounceClient(int i) {
        CastDevice d = devices.get(i);
        if (d.parked) return;
        d.client.disconnect();
        LockSupport.parkNanos((500 + (long) (Math.abs(d.id.hashCode() + System.nanoTime()) % 2000)) * 1_000_000L);
        if (!d.parked) connectWithRetry(d, 60_000);
    }
}
