package im.reliability;

import java.util.List;
import java.util.Map;

/**
 * What a fault campaign recorded and observed, for {@link Checker}. Built by the campaign after
 * the faults stop and the system quiesced; a checker test builds it by hand.
 *
 * @param sends          every send a client attempted, with its final known outcome
 * @param committed      the message and membership events in PostgreSQL at the end, per conversation in seq order
 * @param heads          conversations.head_seq at the end
 * @param topic          the (conv, seq) of every record on the event topic, in partition order (duplicates allowed)
 * @param visibility     per conversation, per user: the visibility periods [from, to] (to = Long.MAX_VALUE if open)
 * @param devices        every device of the campaign, with its user, its local store and its cursor history
 * @param online         devices that were connected when the system quiesced (they must have converged)
 */
public record History(
        List<SendRecord> sends,
        Map<String, List<CommittedEvent>> committed,
        Map<String, Long> heads,
        List<TopicRecord> topic,
        Map<String, Map<String, List<Period>>> visibility,
        List<DeviceRecord> devices,
        List<String> online) {

    /** How a send ended, as far as its client knows. */
    public enum Outcome { SENT, REJECTED, PENDING }

    /** One client send: {@code seq} is the seq from {@code sent} (SENT only, else 0). */
    public record SendRecord(String device, String user, String conv, String cmid, String body, Outcome outcome, long seq) {}

    /** One row of {@code events}. {@code cmid} is null for join/leave. */
    public record CommittedEvent(String conv, long seq, String kind, String sender, String cmid, String body) {}

    public record TopicRecord(String conv, long seq) {}

    /** A visibility period: the member sees events with from <= seq <= to. */
    public record Period(long from, long to) {}

    /**
     * A device at the end: its local store per conversation (seqs in the order the store returns
     * them, which must be ascending and unique), its local contiguous cursor per conversation,
     * the server cursor (device_cursors) per conversation at the end, every cursor value the
     * server reported to it over time per conversation ({@code acked.delivered} and
     * {@code subbed.delivered}, in order), and what is left in its outbox.
     */
    public record DeviceRecord(
            String device,
            String user,
            Map<String, List<Long>> stored,
            Map<String, Long> localCursor,
            Map<String, Long> serverCursor,
            Map<String, List<Long>> cursorHistory,
            int outboxLeft) {}
}
