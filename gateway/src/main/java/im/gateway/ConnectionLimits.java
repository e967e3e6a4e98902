package im.gateway;

import im.infra.identity.DevicePrincipal;
import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The gateway's limits on who may hold how many connections, and on how often an address may
 * fail to authenticate (docs/security.md):
 * <ul>
 *   <li>sockets per remote address ({@code IM_MAX_CONNECTIONS_PER_ADDRESS}): the upgrade of one
 *       more is answered 429;</li>
 *   <li>authenticated connections per user ({@code IM_MAX_CONNECTIONS_PER_USER}): one more is
 *       refused {@code RATE_LIMITED} and closed (1013);</li>
 *   <li>authenticated connections per device ({@code IM_MAX_CONNECTIONS_PER_DEVICE}): one more
 *       replaces the device's oldest, which is closed with {@link #REPLACED_STATUS} (only the
 *       newest gets pushes anyway);</li>
 *   <li>failed authentications per address ({@code IM_AUTH_FAILURES_PER_MINUTE}, a token bucket
 *       refilled over a minute; a {@code BAD_TOKEN} counts, the token of a reinstalled device's old
 *       install does not: it is no guess, and many devices may share an address): once spent, every authentication from that address, on the
 *       socket and on the HTTP reads, is refused {@code RATE_LIMITED} without touching the
 *       database until the bucket refills.</li>
 * </ul>
 * All counts are this gateway's (a client spread over gateways is limited per gateway). Remote
 * addresses are the TCP peer's: behind a proxy, the proxy's (put the limits there). The tables
 * hold only addresses and users with a connection or a recent failure, and the failure table at
 * most {@link #MAX_TRACKED} addresses (beyond that, failures go uncounted and are metered).
 */
final class ConnectionLimits {
    /** Close status of a connection replaced by a newer one of the same device (docs/protocol.md). */
    static final int REPLACED_STATUS = 4009;
    /** Close status of a connection refused for a limit: "try again later" (RFC 6455). */
    static final int TRY_AGAIN_LATER = 1013;
    /** Addresses whose failures are tracked at most. */
    static final int MAX_TRACKED = 100_000;

    private final int perAddress;
    private final int perUser;
    private final int perDevice;
    private final int failuresPerMinute;
    private final Map<InetAddress, Integer> addresses = new HashMap<>();
    private final Map<String, Integer> users = new HashMap<>();
    private final Map<String, Deque<DeviceConnection>> devices = new HashMap<>();
    private final Map<InetAddress, Bucket> failures = new HashMap<>();
    final AtomicLong refusedAddress = new AtomicLong();
    final AtomicLong refusedUser = new AtomicLong();
    final AtomicLong replaced = new AtomicLong();
    final AtomicLong untracked = new AtomicLong();

    ConnectionLimits(GatewayConfig cfg) {
        this.perAddress = cfg.maxConnectionsPerAddress();
        this.perUser = cfg.maxConnectionsPerUser();
        this.perDevice = cfg.maxConnectionsPerDevice();
        this.failuresPerMinute = cfg.authFailuresPerMinute();
    }

    /** Takes a socket slot of the address; false (and nothing taken) when it holds its limit. */
    synchronized boolean openFrom(InetAddress address) {
        int n = addresses.getOrDefault(address, 0);
        if (n >= perAddress) {
            refusedAddress.incrementAndGet();
            return false;
        }
        addresses.put(address, n + 1);
        return true;
    }

    /** Returns the socket slot of the address (the socket closed). */
    synchronized void closedFrom(InetAddress address) {
        addresses.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }

    /**
     * Admits an authenticated connection: false if its user holds the limit (nothing taken; the
     * caller refuses it). Otherwise it is counted, and the device's oldest connection returned
     * when the device now holds more than its limit (the caller closes it), else null.
     */
    synchronized Admission admit(DeviceConnection conn, DevicePrincipal p) {
        int n = users.getOrDefault(p.userId(), 0);
        if (n >= perUser) {
            refusedUser.incrementAndGet();
            return new Admission(false, null);
        }
        users.put(p.userId(), n + 1);
        conn.admitted = true;
        Deque<DeviceConnection> held = devices.computeIfAbsent(p.deviceId(), d -> new ArrayDeque<>());
        held.addLast(conn);
        DeviceConnection oldest = null;
        if (held.size() > perDevice) {
            oldest = held.pollFirst();
            replaced.incrementAndGet();
        }
        return new Admission(true, oldest);
    }

    /** The outcome of {@link #admit}. */
    record Admission(boolean admitted, DeviceConnection replaced) {
    }

    /** A connection closed: if it was admitted, its user's and device's counts go down. */
    synchronized void left(DeviceConnection conn) {
        if (!conn.admitted) return;
        conn.admitted = false;
        DevicePrincipal p = conn.principal();
        Deque<DeviceConnection> held = devices.get(p.deviceId());
        if (held != null) {
            held.remove(conn);   // a replaced one was taken out already
            if (held.isEmpty()) devices.remove(p.deviceId());
        }
        users.computeIfPresent(p.userId(), (u, n) -> n <= 1 ? null : n - 1);
    }

    /** False if the address spent its failed authentications: refuse without looking the token up. */
    synchronized boolean mayAuthenticate(InetAddress address, long nowNanos) {
        Bucket b = failures.get(address);
        if (b == null || b.refill(nowNanos, failuresPerMinute) >= 1) return true;
        return false;
    }

    /** Counts a failed authentication from the address. */
    synchronized void failed(InetAddress address, long nowNanos) {
        Bucket b = failures.get(address);
        if (b == null) {
            if (failures.size() >= MAX_TRACKED) {
                prune(nowNanos);
                if (failures.size() >= MAX_TRACKED) {
                    untracked.incrementAndGet();
                    return;
                }
            }
            b = new Bucket(failuresPerMinute, nowNanos);
            failures.put(address, b);
        }
        b.refill(nowNanos, failuresPerMinute);
        b.tokens = Math.max(0, b.tokens - 1);
    }

    /** Forgets the addresses whose buckets are full again (called now and then, and when the table is full). */
    synchronized void prune(long nowNanos) {
        failures.values().removeIf(b -> b.refill(nowNanos, failuresPerMinute) >= failuresPerMinute);
    }

    /** A token bucket of failures: {@code limit} tokens, refilled at {@code limit} a minute. */
    private static final class Bucket {
        double tokens;
        long last;

        Bucket(int limit, long now) {
            tokens = limit;
            last = now;
        }

        double refill(long now, int limit) {
            tokens = Math.min(limit, tokens + (now - last) * (limit / 60e9));
            last = now;
            return tokens;
        }
    }
}
