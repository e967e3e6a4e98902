package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.ConvState;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import im.read.ConvCursor;
import im.read.ConversationReader;
import im.read.SyncPage;
import java.util.ArrayList;
import java.util.List;

/** {@code sub} and {@code sync}: the read side of the gateway, translated to wire frames. */
final class ReadPath {
    private final ConversationReader reader;
    private final PushHub push;   // null without Kafka: sub then only reports heads and cursors

    ReadPath(ConversationReader reader, PushHub push) {
        this.reader = reader;
        this.push = push;
    }

    Subbed subscribe(DeviceConnection conn, Sub sub) {
        if (push != null) push.attach(conn);   // before the read: notices from now on reach this connection
        List<ConvState> convs = new ArrayList<>();
        java.util.Map<String, Long> from = new java.util.HashMap<>();
        for (ConvCursor c : reader.conversations(conn.principal())) {
            convs.add(new ConvState(c.conv(), c.head(), c.delivered()));
            if (c.member()) from.put(c.conv(), c.fromSeq());   // a left conversation is caught up by sync only
        }
        if (push != null) push.subscribe(conn, from);
        return new Subbed(sub.rid(), convs);
    }

    /** A page of {@code s}, cut short ({@code more}) once its events' bytes would pass {@code maxBytes}. */
    Synced sync(DevicePrincipal who, Sync s, long maxBytes) {
        SyncPage page = reader.sync(who, s.conv(), s.after(), s.limit(), maxBytes);
        return new Synced(s.rid(), s.conv(), page.events(), page.more(), page.head());
    }
}
