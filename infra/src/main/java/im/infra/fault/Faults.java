package im.infra.fault;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Fault injection for tests, off unless {@code IM_FAULT} is set. Rules, comma separated:
 * <ul>
 *   <li>{@code <point>:halt} — {@code Runtime.halt(137)} when the point is reached, like a kill -9;</li>
 *   <li>{@code <point>:drop[:skip[:count]]} — let the first {@code skip} occurrences pass, then drop
 *       the next {@code count} (omitted: all), e.g. the seed's {@code gw.reply.send:drop:0:1}.</li>
 * </ul>
 */
public final class Faults {
    /** Exit code of a halt, the same a SIGKILLed process reports (128 + 9). */
    public static final int HALT_EXIT_CODE = 137;

    private static final Faults NONE = new Faults(new EnumMap<>(FaultPoint.class));

    private final Map<FaultPoint, Rule> rules;

    private Faults(Map<FaultPoint, Rule> rules) {
        this.rules = rules;
    }

    public static Faults none() {
        return NONE;
    }

    /** Parses a rule list; throws {@link ConfigException} naming IM_FAULT on any mistake. */
    public static Faults parse(String spec) {
        if (spec == null || spec.isBlank()) return NONE;
        Map<FaultPoint, Rule> rules = new EnumMap<>(FaultPoint.class);
        for (String raw : spec.split(",")) {
            String[] parts = raw.trim().split(":");
            FaultPoint point = FaultPoint.byName(parts[0]);
            if (point == null) {
                throw bad("unknown fault point '" + parts[0] + "', known: " + FaultPoint.names());
            }
            if (parts.length < 2) throw bad("rule '" + raw + "' needs an action: halt or drop");
            Rule rule;
            if (parts[1].equals("halt") && parts.length == 2) {
                rule = new Rule(true, 0, 0);
            } else if (parts[1].equals("drop") && parts.length <= 4) {
                long skip = parts.length > 2 ? number(parts[2], raw) : 0;
                long count = parts.length > 3 ? number(parts[3], raw) : Long.MAX_VALUE;
                rule = new Rule(false, skip, count);
            } else {
                throw bad("rule '" + raw + "' must be <point>:halt or <point>:drop[:skip[:count]]");
            }
            if (rules.put(point, rule) != null) throw bad("point '" + parts[0] + "' has two rules");
        }
        return new Faults(rules);
    }

    private static long number(String s, String rule) {
        try {
            long n = Long.parseLong(s);
            if (n < 0) throw bad("negative number in rule '" + rule + "'");
            return n;
        } catch (NumberFormatException e) {
            throw bad("'" + s + "' in rule '" + rule + "' is not a number");
        }
    }

    private static ConfigException bad(String msg) {
        return new ConfigException(ConfigKeys.FAULT.name(), msg);
    }

    public boolean isEmpty() {
        return rules.isEmpty();
    }

    /** Halts the JVM with exit code 137 if a halt rule names this point. */
    public void maybeHalt(FaultPoint point) {
        Rule r = rules.get(point);
        if (r != null && r.halt) {
            System.err.println("IM_FAULT: halting at " + point.wireName());
            System.err.flush();
            Runtime.getRuntime().halt(HALT_EXIT_CODE);
        }
    }

    /**
     * True if this occurrence of the point must be dropped. Counts every call; prints
     * {@code IM_FAULT: dropped <point>} on stderr for each drop (harnesses count these lines).
     */
    public boolean shouldDrop(FaultPoint point) {
        Rule r = rules.get(point);
        if (r == null || r.halt) return false;
        long n = r.seen.getAndIncrement();
        boolean drop = n >= r.skip && n - r.skip < r.count;
        if (drop) System.err.println("IM_FAULT: dropped " + point.wireName());
        return drop;
    }

    private static final class Rule {
        final boolean halt;
        final long skip;
        final long count;
        final AtomicLong seen = new AtomicLong();

        Rule(boolean halt, long skip, long count) {
            this.halt = halt;
            this.skip = skip;
            this.count = count;
        }
    }
}
