package im.protocol;

/**
 * A frame sent by a device to the server. Every client frame carries a request id
 * ({@code rid}) that the server echoes in its reply or error, so a client can match
 * answers to requests over one socket. Encoded and decoded only by {@link FrameCodec}.
 */
public sealed interface ClientFrame permits Auth, Send, Edit, Recall, Ack, Read, Typing, Receipts, Sub, Sync, CatchUp {
    /** The request id chosen by the client; matches {@link Limits#isValidId(String)}. */
    String rid();
}
