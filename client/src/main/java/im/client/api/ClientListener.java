package im.client.api;

import im.protocol.ServerFrame;

/**
 * Callbacks of an {@link im.client.ImClient}. All methods default to no-op. They are called on one
 * dedicated client thread, in the order the client observed the events, so a callback may
 * block or call {@link im.client.ImClient#send} without stalling the socket reader; a callback
 * that throws is logged and does not affect the client.
 */
public interface ClientListener {
    /** Every {@code sent} of a send attempt, including those of automatic resends and late replies. */
    default void onSent(SentAck ack) {
    }

    /**
     * An outbox entry was given up: it left the outbox without being committed, because the server
     * refused it terminally ({@code cause.code()} is not retriable: BAD_FIELD, NOT_MEMBER,
     * CMID_CONFLICT, ...) or answered {@code INTERNAL} {@link ClientOptions#maxInternalErrors()} times.
     * Called once per entry, after the removal is durable, also for automatic resends that no
     * {@link im.client.ImClient#send} caller waits for (and also when a {@code send} call threw for it). The
     * message will not be sent again; show it to the user as failed.
     */
    default void onSendFailed(PendingSend entry, ImErrorException cause) {
    }

    /**
     * The client stopped retrying the ack of {@code conv} up to {@code seq}: the server refused it for
     * good (e.g. NOT_MEMBER) or answered {@code INTERNAL} {@link ClientOptions#maxInternalErrors()}
     * times without a success in between. The events stay stored; the value is acked again only
     * once the cursor moves or after a reconnect ({@code subbed} shows the server behind).
     */
    default void onAckFailed(String conv, long seq, ImErrorException cause) {
    }

    /**
     * The client stopped retrying {@code sub} on the current connection: refused for good, or
     * answered {@code INTERNAL} {@link ClientOptions#maxInternalErrors()} times without a success
     * in between. No pushes or hints arrive until the next (re)connect subscribes again.
     */
    default void onSubscribeFailed(ImErrorException cause) {
    }

    /** Every frame without a pending request id: {@code event}, {@code hint}, and stray (late or unknown) replies. */
    default void onPush(ServerFrame frame) {
    }

    /**
     * An event was stored durably for the first time (never for a duplicate). Called after the store
     * committed, in store order (per conversation in seq order within one batch; out-of-order pushes
     * are reported in arrival order).
     */
    default void onEvent(ReceivedEvent event) {
    }

    /**
     * A message of {@code conv} was edited: {@code edit} is the {@code edit} event just stored (its
     * {@code ref} the message's seq, its {@code body} the new text). Called after {@link #onEvent} for
     * it. Edits may arrive in any order: the latest is the one with the highest seq, which is what the
     * local queries show ({@link ReceivedEvent#text()}).
     */
    default void onEdited(ReceivedEvent edit) {
    }

    /**
     * The message at {@code seq} of {@code conv} was recalled: its body and its edits' are gone from
     * the local store (already, when this is called). Called after {@link #onEvent} for the recall.
     */
    default void onRecalled(String conv, long seq) {
    }

    /**
     * {@code user} is typing in {@code conv} (another member; never this device's own user). Show it
     * for {@link im.protocol.Limits#TYPING_SHOW_MILLIS} unless another call, or a message of that
     * user, comes first. Ephemeral and best effort: nothing is stored.
     */
    default void onTyping(String conv, String user) {
    }

    /**
     * The read cursor or the unread count of {@code conv} changed ({@link ReadStatus}): a read state
     * came from the server ({@code subbed}, the {@code readack} of {@link im.client.ImClient#markRead}, or an
     * {@code unread} push when another device of the user read), or a stored message of another user
     * counts. Called after the change is durable, with the values then; only on a change.
     */
    default void onUnread(String conv, long read, long unread) {
    }

    /** The durable contiguous cursor of {@code conv} advanced to {@code cursor} (before the ack covering it is sent). */
    default void onCursor(String conv, long cursor) {
    }

    /** A connection was established and authenticated (after {@link im.client.ImClient#connect()} or an automatic reconnect). */
    default void onConnected() {
    }

    /**
     * The authenticated connection ended. {@code cause} is null when {@link im.client.ImClient#disconnect()} or
     * {@link im.client.ImClient#close()} ended it, an {@link ImErrorException} for a terminal server close
     * (BAD_TOKEN / STALE_INSTALL), otherwise a {@link ConnectionLostException}.
     */
    default void onDisconnected(Throwable cause) {
    }

    /**
     * The connection state changed (only on a change, in order). {@code cause} says why for
     * {@link ConnectionState#DISCONNECTED}: null after {@link im.client.ImClient#disconnect()}, an
     * {@link ImErrorException} when the server refused or ended the session terminally (BAD_TOKEN,
     * STALE_INSTALL: no reconnect), otherwise the {@link java.io.IOException} of the lost connection or the
     * failed attempt (a reconnect follows with {@code autoReconnect}); null for the other states.
     */
    default void onStateChanged(ConnectionState state, Throwable cause) {
    }

    /**
     * After each authenticated (re)connect with {@code autoReceive}: whether the local store caught
     * up with what was missed while away. {@code recovered} is true once the subscription answered
     * (every page of it) and every conversation whose head was above the local cursor has caught up
     * (by {@code catchup} pages across conversations, or its own sync when still behind after them), so
     * the conversation list and pages are current; false when that cannot happen on this connection:
     * the subscription was given up ({@code behind} empty: the state is unknown) or a sync failed
     * ({@code behind} names the conversations still behind). Called at most once per connection; a lost connection before the end
     * calls nothing (the next one tries again). Hints and gaps later on are repaired as usual.
     */
    default void onRecovery(boolean recovered, java.util.List<String> behind) {
    }
}
