package im.store.directory;

import java.util.List;

/** A conversation as the admin API shows it. */
public record ConversationInfo(String conv, String kind, long head, List<Membership> memberships) {}
