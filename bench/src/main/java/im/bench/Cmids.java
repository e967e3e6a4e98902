package im.bench;

/**
 * The client message ids of one bench run, so that its pushes are told from anything else in the
 * same conversations: {@code <tag>.<n>} for send n, {@code <tag>.p<attempt>-<group>} for a probe.
 */
record Cmids(String tag) {
    String send(int i) {
        return tag + "." + i;
    }

    String probe(int attempt, int group) {
        return tag + ".p" + attempt + "-" + group;
    }

    /** The send number of a cmid of this run, -1 for a probe of it, -2 for anything else. */
    int index(String cmid) {
        if (cmid == null || !cmid.startsWith(tag + ".")) return -2;
        String rest = cmid.substring(tag.length() + 1);
        return rest.startsWith("p") ? -1 : Integer.parseInt(rest);
    }
}
