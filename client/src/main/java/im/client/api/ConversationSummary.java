package im.client.api;

import java.util.Objects;

/**
 * One row of the local conversation list ({@link im.client.ImClient#conversations}): the conversation, its
 * durable cursor, the user's read cursor ({@code readSeq}, the server's: see {@link ReadStatus}), the
 * unread count now (as {@link ReadStatus#unread()}), and the stored event with the highest seq
 * ({@code last}; null when none is stored yet).
 */
public record ConversationSummary(String conv, long cursor, long readSeq, long unread, ReceivedEvent last) {
    public ConversationSummary {
        Objects.requireNonNull(conv, "conv");
    }
}
