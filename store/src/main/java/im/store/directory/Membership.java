package im.store.directory;

/** One visibility period of a member: events with {@code fromSeq <= seq <= toSeq} (toSeq null = open). */
public record Membership(String user, long fromSeq, Long toSeq) {}
