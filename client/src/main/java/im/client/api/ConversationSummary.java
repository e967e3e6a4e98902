package im.client.api;

import java.util.Objects;

/**
 * One row of the local conversation list ({@link im.client.ImClient#conversations}): the conversation, its
 * durable cursor, the read mark the app set ({@link im.client.ImClient#markRead}), how many messages from
 * other users are stored above that mark, and the stored event with the highest seq ({@code last};
 * null when none is stored yet).
 */
public record ConversationSummary(String conv, long cursor, long readSeq, long unread, ReceivedEvent last) {
    public ConversationSummary {
        Objects.requireNonNull(conv, "conv");
    }
}
