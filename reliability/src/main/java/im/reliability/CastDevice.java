package im.reliability;

import im.client.ImClient;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;

/** One device of the campaign's cast: its client, what it attempted and every ack it saw. */
final class CastDevice {
    /**
     * One send attempt, by the install epoch that made it: a message, or an edit or recall
     * ({@code kind}) of the message at {@code ref}.
     */
    record Attempt(String cmid, String conv, String body, int epoch, String kind, long ref) {
        /** A message. */
        Attempt(String cmid, String conv, String body, int epoch) {
            this(cmid, conv, body, epoch, im.protocol.Event.MSG, 0);
        }
    }

    /** What one install of a device was told and stored; for a replaced install also its state when it was closed. */
    static final class Install {
        final List<History.Seen> seen = new CopyOnWriteArrayList<>();
        final List<History.CommittedEvent> storedEvents = new CopyOnWriteArrayList<>();
        final List<History.CursorReport> cursorReports = new CopyOnWriteArrayList<>();
        final List<History.ReadReport> readReports = new CopyOnWriteArrayList<>();
        volatile long retiredAt;
        volatile Map<String, List<Long>> stored = Map.of();
        volatile Map<String, Long> local = Map.of();
        volatile Map<String, Map<Long, String>> bodies = Map.of();
        volatile Set<String> pending = Set.of();
    }

    final int index;
    final String id;
    final String user;
    volatile String token;
    volatile Path stateDir;
    /** A probe device: sends only the nemesis' probe messages, never faulted. */
    boolean probe;
    /** Parked offline (see {@link Campaign.Options#offlineAtEnd}): nobody reconnects it until the first check is done. */
    volatile boolean parked;
    volatile ImClient client;
    /** The gateway (index into {@link Stack#gatewayPorts}) this device connects to. */
    volatile int gateway;
    final ConcurrentLinkedQueue<Attempt> attempts = new ConcurrentLinkedQueue<>();
    /** cmid -> the seq of its first {@code sent} (what the sender waits for). */
    final Map<String, Long> acked = new ConcurrentHashMap<>();
    /** cmid -> every {@code sent} reply, in arrival order. */
    final Map<String, List<History.SentReply>> replies = new ConcurrentHashMap<>();
    /** Per install epoch: recorded by the wire tap and the SDK's onEvent, for the checker. */
    final Map<Integer, Install> installs = new ConcurrentHashMap<>();
    volatile int epoch = 1;
    WireTap tap;

    CastDevice(int index, String id, String user, String token, Path stateDir) {
        this.index = index;
        this.id = id;
        this.user = user;
        this.token = token;
        this.stateDir = stateDir;
        this.gateway = index % Stack.GATEWAYS;
    }

    Install install(int epoch) {
        return installs.computeIfAbsent(epoch, k -> new Install());
    }
}
