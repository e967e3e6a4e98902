package im.gateway;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code IM_ADMIN_TOKEN}: one admin token, or several separated by commas (to rotate without
 * downtime: add the new one, move the callers, remove the old one). Each must look like a
 * secret: at least {@link #MIN_BITS} bits by a character-class estimate (length times the
 * log2 of the size of the classes it uses: lower case, upper case, digits, others), at least
 * {@link #MIN_BITS_PER_CHAR} bits per character by its own character frequencies (which refuses
 * "aaaa…" and "abab…"), and not one shorter string repeated. {@code openssl rand -hex 24} passes.
 * The rule refuses obvious tokens; it cannot tell a guessable one that merely looks random.
 */
final class AdminTokens {
    static final int MIN_BITS = 128;
    static final double MIN_BITS_PER_CHAR = 3.0;

    private AdminTokens() {
    }

    static List<String> parse(String value) {
        List<String> tokens = new ArrayList<>();
        for (String t : value.split(",", -1)) {
            String why = weakness(t);
            if (why != null) {
                throw new ConfigException(ConfigKeys.ADMIN_TOKEN.name(), "token " + (tokens.size() + 1) + " " + why
                        + " (generate one with: openssl rand -hex 24)");
            }
            tokens.add(t);
        }
        return List.copyOf(tokens);
    }

    /** Why the token is refused, or null. Never includes the token. */
    static String weakness(String t) {
        if (t.isEmpty()) return "is empty";
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c <= ' ' || c > '~') return "must be printable ASCII without spaces";
        }
        if (t.length() < 16) return "must be at least 16 characters";
        if (classBits(t) < MIN_BITS) return "is too short for its characters: under " + MIN_BITS + " bits";
        if (frequencyBits(t) < MIN_BITS_PER_CHAR) return "repeats too few characters: under " + MIN_BITS_PER_CHAR + " bits per character";
        if (repeats(t)) return "is a shorter string repeated";
        return null;
    }

    private static double classBits(String t) {
        boolean lower = false, upper = false, digit = false, other = false;
        for (char c : t.toCharArray()) {
            if (c >= 'a' && c <= 'z') lower = true;
            else if (c >= 'A' && c <= 'Z') upper = true;
            else if (c >= '0' && c <= '9') digit = true;
            else other = true;
        }
        int pool = (lower ? 26 : 0) + (upper ? 26 : 0) + (digit ? 10 : 0) + (other ? 32 : 0);
        return t.length() * Math.log(pool) / Math.log(2);
    }

    private static double frequencyBits(String t) {
        Map<Character, Integer> n = new HashMap<>();
        for (char c : t.toCharArray()) n.merge(c, 1, Integer::sum);
        double h = 0;
        for (int k : n.values()) {
            double p = (double) k / t.length();
            h -= p * Math.log(p) / Math.log(2);
        }
        return h;
    }

    private static boolean repeats(String t) {
        int len = t.length();
        for (int period = 1; period <= len / 2; period++) {
            if (len % period != 0) continue;
            boolean same = true;
            for (int i = period; i < len && same; i++) same = t.charAt(i) == t.charAt(i - period);
            if (same) return true;
        }
        return false;
    }
}
