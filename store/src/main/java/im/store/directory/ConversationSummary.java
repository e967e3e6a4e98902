package im.store.directory;

/** A conversation as the admin API lists it: kind, head seq and the number of current members. */
public record ConversationSummary(String conv, String kind, long head, int members) {}
