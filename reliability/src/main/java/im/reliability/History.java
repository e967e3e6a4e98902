package im.reliability;

import java.util.List;
import java.util.Map;

/**
 * What a fault campaign recorded and observed, for {@link Checker}. Built by the campaign after
 * the faults stop and the system quiesced; a checker test builds it by hand.
 *
 * <p>Everything a device saw is recorded as it arrived on the device's socket (a wire tap between
 * the SDK and the gateway, see {@link WireTap}) or as the SDK reported it ({@code onEvent}), never
 * by sampling server tables: a rule about what a device was told can only fail if the record is
 * what the device was told.
 *
 * @param sends         every send a client attempted (messages, edits and recalls), with every {@code sent} reply it got
 * @param committed     the message and membership events in PostgreSQL at the end, per conversation in seq order
 * @param heads         conversations.head_seq at the end
 * @param topic         the (conv, seq) of every record on the event topic, in partition order (duplicates allowed)
 * @param visibility    per conversation, per user: the periods of the memberships table [from, to]
 *                      (to = Long.MAX_VALUE if open); the checker compares them with the periods the
 *                      log's join/leave events define, and judges visibility by the log
 * @param membershipOps every membership change the campaign made through the admin API, with the seq it was answered
 * @param devices       every install of every device of the campaign (a reinstalled device has one record per install)
 * @param readCursors   read_cursors.read_seq at the end, per conversation, per user (no row: nothing read, 0)
 */
public record History(
        List<SendRecord> sends,
        Map<String, List<CommittedEvent>> committed,
        Map<String, Long> heads,
        List<TopicRecord> topic,
        Map<String, Map<String, List<Period>>> visibility,
        List<MembershipOp> membershipOps,
        List<DeviceRecord> devices,
        Map<String, Map<String, Long>> readCursors) {

    /** How a send ended, as far as its client knows: SENT once any {@code sent} arrived. */
    public enum Outcome { SENT, REJECTED, PENDING }

    /** One {@code sent} reply as the sender received it, and when the SDK reported it ({@code onSent}; 0 if unknown). */
    public record SentReply(long seq, boolean dup, long atMillis) {
        public SentReply(long seq, boolean dup) {
            this(seq, dup, 0);
        }
    }

    /**
     * One client send (one cmid) and every {@code sent} reply to it, in arrival order. {@code kind} is
     * {@code msg}, {@code edit} or {@code recall}; {@code ref} the seq of the message an edit or a
     * recall changes (0 for a message); a recall's body is {@code ""}.
     */
    public record SendRecord(String device, String user, String conv, String cmid, String body, Outcome outcome,
                             List<SentReply> replies, String kind, long ref) {
        /** A message. */
        public SendRecord(String device, String user, String conv, String cmid, String body, Outcome outcome,
                          List<SentReply> replies) {
            this(device, user, conv, cmid, body, outcome, replies, "msg", 0);
        }

        /** The seq of the first reply, 0 if none. */
        public long seq() {
            return replies == null || replies.isEmpty() ? 0 : replies.get(0).seq();
        }
    }

    /**
     * One conversation event: a row of {@code events}, or the same fields as a device saw or stored
     * them. {@code cmid} is null for join/leave; {@code body} may be null or empty for join/leave, and
     * is empty for a recall and for a message or edit the log's recall emptied. {@code users} lists the
     * users of a bulk join (null for every other event); {@code ref} is the seq of the message an edit
     * or a recall changes (0 for every other kind).
     */
    public record CommittedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body,
                                 List<String> users, long ref) {
        /** A single event: a message, or a join or leave of one user ({@code sender}). */
        public CommittedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body) {
            this(conv, seq, kind, mid, sender, cmid, body, null, 0);
        }

        /** A bulk join ({@code users}) or a single event. */
        public CommittedEvent(String conv, long seq, String kind, String mid, String sender, String cmid, String body,
                              List<String> users) {
            this(conv, seq, kind, mid, sender, cmid, body, users, 0);
        }

        /** An edit or a recall of the message at {@code ref}. */
        public static CommittedEvent change(String conv, long seq, String kind, String mid, String sender, String cmid,
                                            String body, long ref) {
            return new CommittedEvent(conv, seq, kind, mid, sender, cmid, body, null, ref);
        }

        /** The users a join or leave adds or removes: each of a bulk join's, else the sender. */
        public List<String> members() {
            return users != null ? users : List.of(sender);
        }
    }

    public record TopicRecord(String conv, long seq) {}

    /** A visibility period: the member sees events with from <= seq <= to. */
    public record Period(long from, long to) {}

    /** A membership change made by the campaign: {@code kind} join or leave, answered with event {@code seq}. */
    public record MembershipOp(String conv, String user, String kind, long seq, boolean changed) {}

    /** How an event frame reached a device: a push, a {@code synced} page, a {@code caughtup} page. */
    public enum Source { PUSH, SYNC, CATCHUP }

    /**
     * An event a device received on its socket: a pushed {@code event} frame or one event of a
     * {@code synced} or {@code caughtup} page; {@code requestAtMillis} is when the device's socket
     * sent the request the page answers (0 for a push, or when the tap did not see the request).
     */
    public record Seen(Source source, long atMillis, CommittedEvent event, long requestAtMillis) {
        public Seen(Source source, long atMillis, CommittedEvent event) {
            this(source, atMillis, event, 0);
        }
    }

    /** Which reply carried a server cursor. */
    public enum CursorSource { ACKED, SUBBED }

    /** A cursor the server reported to a device ({@code acked.delivered} or a {@code subbed} entry's delivered). */
    public record CursorReport(String conv, long delivered, CursorSource source) {}

    /** Which frame carried a read state. */
    public enum ReadSource { READACK, UNREAD, SUBBED }

    /**
     * A read state the server told a device ({@code readack}, an {@code unread} push or a {@code subbed}
     * entry), with the numbers as they were on the wire (also when the frame did not decode, e.g. a
     * negative count), and when it arrived.
     */
    public record ReadReport(String conv, long read, long unread, long head, ReadSource source, long atMillis) {}

    /**
     * One install of a device.
     *
     * @param device        device id
     * @param epoch         install epoch (from {@code authed})
     * @param user          its user
     * @param online        this install was connected when the system quiesced (it must have converged)
     * @param retiredMillis when the campaign reinstalled the device (epoch ms; 0 while it is the current install)
     * @param stored        its local store at the end per conversation (seqs ascending)
     * @param localCursor   its local contiguous cursor per conversation at the end
     * @param serverCursor  device_cursors.delivered_seq per conversation at the end (current install only)
     * @param seen          every event frame it received, in arrival order
     * @param storedEvents  every event the SDK reported stored for the first time ({@code onEvent}), in order
     * @param cursorReports every cursor the server reported to it, in arrival order
     * @param outboxLeft    what is left in its outbox
     * @param readReports   every read state the server told it, in arrival order
     * @param unread        its SDK's {@code unread(conv)} at the end per conversation of its user (online installs only)
     * @param bodies        the body of every stored message and edit in its store at the end, per conversation, by seq
     *                      (read in the same snapshot as {@code stored})
     * @param shown         the text its SDK's local queries show ({@code eventsBefore}, {@code ReceivedEvent.text()})
     *                      for every stored message at the end, per conversation, by seq (online installs only)
     */
    public record DeviceRecord(
            String device,
            int epoch,
            String user,
            boolean online,
            long retiredMillis,
            Map<String, List<Long>> stored,
            Map<String, Long> localCursor,
            Map<String, Long> serverCursor,
            List<Seen> seen,
            List<CommittedEvent> storedEvents,
            List<CursorReport> cursorReports,
            int outboxLeft,
            List<ReadReport> readReports,
            Map<String, Long> unread,
            Map<String, Map<Long, String>> bodies,
            Map<String, Map<Long, String>> shown) {
        /** An install whose store's bodies and shown texts were not read. */
        public DeviceRecord(String device, int epoch, String user, boolean online, long retiredMillis,
                            Map<String, List<Long>> stored, Map<String, Long> localCursor, Map<String, Long> serverCursor,
                            List<Seen> seen, List<CommittedEvent> storedEvents, List<CursorReport> cursorReports,
                            int outboxLeft, List<ReadReport> readReports, Map<String, Long> unread) {
            this(device, epoch, user, online, retiredMillis, stored, localCursor, serverCursor, seen, storedEvents,
                    cursorReports, outboxLeft, readReports, unread, Map.of(), Map.of());
        }
    }
}
