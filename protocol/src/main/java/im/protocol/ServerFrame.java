package im.protocol;

/**
 * A frame sent by the server to a device: replies to requests ({@link Authed},
 * {@link Sent}, {@link Acked}, {@link Subbed}, {@link Synced}, {@link CaughtUp}, {@link ErrorFrame})
 * and unsolicited frames ({@link EventPush}, {@link Hint}). Encoded and decoded only
 * by {@link FrameCodec}.
 */
public sealed interface ServerFrame permits Authed, Sent, Acked, ReadAck, Unread, TypingPush, ReceiptsReply, Subbed, Synced, CaughtUp, EventPush, Hint, ErrorFrame {
}
