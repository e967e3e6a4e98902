package im.store.directory;

import java.util.List;

/**
 * The head of a conversation and the cursor of every device of every user who is or was a member,
 * read in one snapshot.
 */
public record ConversationCursors(String conv, long head, List<DeviceCursor> devices) {
    public ConversationCursors {
        devices = List.copyOf(devices);
    }
}
