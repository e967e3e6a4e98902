package im.reliability;

/** Checks a campaign {@link History} against the platform's promises. Pure: no I/O. */
public final class Checker {
    private Checker() {}

    public static CheckReport check(History h) {
        throw new UnsupportedOperationException("being written");
    }
}
