package im.gateway;

import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Typing;
import im.topics.TypingRecord;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/**
 * {@code typing}: ephemeral, never stored. A connection's typing in a conversation its user is a
 * member of (as the connection knows from {@code sub} and the membership notices; the delivery node
 * checks again against the log) is published on the typing topic, at most once per
 * {@code IM_TYPING_INTERVAL_MS} per connection and conversation: the ones in between are dropped,
 * as are all of them without Kafka (no one to route them). No reply but a refusal.
 */
final class TypingPath {
    /** A connection's throttle entries are pruned when it has typed in more conversations than this. */
    private static final int PRUNE_ABOVE = 64;

    private final PushHub push;   // null without Kafka
    private final long intervalNanos;
    private final RequestMeters meters;
    private final Clock clock;

    TypingPath(PushHub push, java.time.Duration interval, RequestMeters meters, Clock clock) {
        this.push = push;
        this.intervalNanos = interval.toNanos();
        this.meters = meters;
        this.clock = clock;
    }

    /** Takes {@code t} from {@code conn}: null (no reply), or the refusal to answer. */
    ErrorFrame typing(DeviceConnection conn, Typing t) {
        if (!conn.visibility.member(t.conv())) {
            meters.typing("refused");
            return new ErrorFrame(t.rid(), ErrorCode.NOT_MEMBER,
                    "typing: not a member of " + t.conv() + " (or the conversation is not subscribed on this connection)");
        }
        if (!conn.mayType(t.conv(), System.nanoTime(), intervalNanos, PRUNE_ABOVE) || push == null) {
            meters.typing("throttled");
            return null;
        }
        push.publishTyping(new TypingRecord(t.conv(), conn.principal().userId(), conn.principal().deviceId(), clock.millis()));
        meters.typing("published");
        return null;
    }
}
