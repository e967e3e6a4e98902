package im.gateway;

import im.store.directory.DirectoryException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit trail: every admin request and every failed or throttled authentication is one log
 * line on the logger {@code im.audit} (key=value pairs: {@code action}, {@code who}, {@code from},
 * {@code outcome}, {@code detail}) and a count on {@code /metrics} ({@code im.audit.events} by
 * action and outcome). No line holds a token: who is a device or user id, or which admin token
 * (its position in {@code IM_ADMIN_TOKEN}), never the secret.
 */
final class Audit {
    private static final Logger log = LoggerFactory.getLogger("im.audit");
    private final MeterRegistry meters;
    private final String gateway;

    Audit(MeterRegistry meters, String gateway) {
        this.meters = meters;
        this.gateway = gateway;
    }

    /** An admin request, answered with {@code status}. */
    void admin(String action, int adminToken, InetAddress from, int status) {
        String who = adminToken < 0 ? "-" : "admin-token-" + (adminToken + 1);
        record("admin " + action, who, from, Integer.toString(status), adminToken < 0 ? "wrong or missing admin token" : "");
    }

    /** A refused device token on the socket or the HTTP reads ({@code door}). */
    void authFailed(String door, InetAddress from, DirectoryException e) {
        record("auth." + door, "-", from, e.code().name(), e.getMessage());
    }

    /** An authentication refused without a lookup: the address spent its failures. */
    void authThrottled(String door, InetAddress from) {
        record("auth." + door, "-", from, "RATE_LIMITED", "too many failed authentications from this address");
    }

    private void record(String action, String who, InetAddress from, String outcome, String detail) {
        Counter.builder("im.audit.events").description("audited actions (admin requests, failed authentications)")
                .tag("gateway", gateway).tag("action", action).tag("outcome", outcome).register(meters).increment();
        log.info("action=\"{}\" who={} from={} outcome={} detail=\"{}\"", action, who,
                from == null ? "-" : from.getHostAddress(), outcome, detail.replace('"', '\''));
    }
}
