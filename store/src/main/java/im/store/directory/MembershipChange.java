package im.store.directory;

/** The outcome of adding or removing a member: the seq of the join/leave event, or no change. */
public record MembershipChange(String conv, String user, String kind, long seq, boolean changed) {}
