package im.protocol;

import java.util.Objects;
import java.util.Optional;

/**
 * Where a {@code catchup} resumes: just after the event ({@code conv}, {@code seq}) in
 * (conversation, seq) order. On the wire it is the opaque string {@code conv/seq}, taken from a
 * {@link CaughtUp} and sent back unchanged; it does not depend on the device's cursors, which may
 * not have moved between pages (acks are coalesced).
 */
public record CatchUpPosition(String conv, long seq) {
    public CatchUpPosition {
        Objects.requireNonNull(conv, "conv");
    }

    /** The wire form, {@code conv/seq}. */
    public String token() {
        return conv + "/" + seq;
    }

    /** Reads a wire form; empty if {@code token} is not one ({@code conv} an id, {@code seq} 0..{@link Limits#MAX_SEQ} in decimal). */
    public static Optional<CatchUpPosition> parse(String token) {
        int slash = token.lastIndexOf('/');
        if (slash < 0) return Optional.empty();
        String conv = token.substring(0, slash);
        String digits = token.substring(slash + 1);
        if (!Limits.isValidId(conv) || digits.isEmpty() || digits.length() > 16) return Optional.empty();
        for (int i = 0; i < digits.length(); i++) {
            char c = digits.charAt(i);
            if (c < '0' || c > '9') return Optional.empty();
        }
        if (digits.length() > 1 && digits.charAt(0) == '0') return Optional.empty();
        long seq = Long.parseLong(digits);
        return seq > Limits.MAX_SEQ ? Optional.empty() : Optional.of(new CatchUpPosition(conv, seq));
    }
}
