package im.store.directory;

/** A user as the admin API lists it: id, display name and how many devices are registered. */
public record UserSummary(String user, String name, int devices) {}
