package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.CatchUp;
import im.protocol.CaughtUp;
import im.protocol.ConvState;
import im.protocol.Read;
import im.protocol.Receipts;
import im.protocol.ReceiptsReply;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import im.store.cursor.ReadCursors;
import im.store.cursor.ReadWriter;
import im.store.read.CatchUpPage;
import im.store.read.ConvCursor;
import im.store.read.ConvPage;
import im.store.read.ConversationReader;
import im.store.read.MessageReceipts;
import im.store.read.SyncPage;
import im.topics.ReadNotice;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * {@code sub}, {@code sync}, {@code catchup}, {@code read} and {@code receipts}: the read side of the gateway,
 * translated to wire frames.
 */
final class ReadPath {
    private final ConversationReader reader;
    private final ReadCursors readCursors;
    private final ReadWriter readWriter;
    private final PushHub push;   // null without Kafka: sub then only reports heads and cursors
    private final MessageReceipts receipts;

    ReadPath(ConversationReader reader, ReadCursors readCursors, ReadWriter readWriter, PushHub push, MessageReceipts receipts) {
        this.reader = reader;
        this.readCursors = readCursors;
        this.readWriter = readWriter;
        this.push = push;
        this.receipts = receipts;
    }

    /** {@code receipts}: the receipts of the user's own messages, from the cursors now. */
    ReceiptsReply receipts(DevicePrincipal who, Receipts r) {
        return new ReceiptsReply(r.rid(), r.conv(), receipts.receipts(who, r.conv(), r.seqs()));
    }

    /**
     * One page of {@code sub}: registers the page's conversations. The connection is attached to
     * the notices before every page's read (a no-op after the first), so a join or leave that commits
     * while a page is read, or between pages, reaches it by the read or by its notice; a join to a
     * conversation before {@code after} (a page already read) arrives by its notice.
     */
    Subbed subscribe(DeviceConnection conn, Sub sub) {
        if (push != null) push.attach(conn);   // before the read: notices from now on reach this connection
        ConvPage page = reader.conversations(conn.principal(), sub.after() == null ? "" : sub.after(), sub.limit());
        Map<String, ReadState> states = new HashMap<>();
        List<String> ids = page.convs().stream().map(ConvCursor::conv).toList();
        readCursors.states(conn.principal().userId(), ids).forEach(r -> states.put(r.conv(), r.state()));
        List<ConvState> convs = new ArrayList<>(page.convs().size());
        Map<String, Long> from = new HashMap<>();
        for (ConvCursor c : page.convs()) {
            // The read state was taken just after the page (a head at least as new): its head is the
            // entry's, since the unread count is counted at it (docs/protocol.md, "Read state").
            ReadState r = states.getOrDefault(c.conv(), new ReadState(0, 0, c.head()));
            convs.add(new ConvState(c.conv(), Math.max(c.head(), r.head()), c.delivered(), r.read(), r.unread()));
            if (c.member()) from.put(c.conv(), c.fromSeq());   // a left conversation is caught up by sync only
        }
        if (push != null) push.subscribe(conn, from);
        return new Subbed(sub.rid(), convs, page.more());
    }

    /**
     * {@code read}: moves the user's read cursor (batched and throttled by the {@link ReadWriter},
     * off the worker pool) and answers its read state; when it moved, the user's other connections,
     * on every gateway, get it as an {@code unread} push through the notices topic.
     */
    CompletableFuture<ReadAck> read(DevicePrincipal who, Read r) {
        return readWriter.read(who, r.conv(), r.seq()).thenApply(m -> {
            if (m.moved() && push != null) push.publishRead(new ReadNotice(r.conv(), who.userId(), who.deviceId(), m.state()));
            return new ReadAck(r.rid(), r.conv(), m.state());
        });
    }

    /** A page of {@code s}, cut short ({@code more}) once its events' bytes would pass {@code maxBytes}. */
    Synced sync(DevicePrincipal who, Sync s, long maxBytes) {
        SyncPage page = reader.sync(who, s.conv(), s.after(), s.limit(), maxBytes);
        return new Synced(s.rid(), s.conv(), page.events(), page.more(), page.head());
    }

    /** A page of {@code c} across conversations, cut short ({@code more}) as a sync page is. */
    CaughtUp catchUp(DevicePrincipal who, CatchUp c, long maxBytes) {
        CatchUpPage page = reader.catchUp(who, c.after(), c.limit(), maxBytes);
        return new CaughtUp(c.rid(), page.events(), page.convs(), page.more(), page.after());
    }
}
