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
 *       the next {@code count} (omitted: all), e.g. the seed's {@code gw.reply.send:drop:0:1};</li>
 *   <li>{@code <point>:fail[:skip[:count]]} — the same counting, but the occurrence throws
 *       {@link InjectedFailure}, an unexpected exception like a bug's (the gateway answers
 *       {@code INTERNAL}); only points that call {@link #maybeFail} support it.</li>
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
                rule = new Rule(Action.HALT, 0, 0);
            } else if ((parts[1].equals("drop") || parts[1].equals("fail")) && parts.length <= 4) {
                long skip = parts.length > 2 ? number(parts[2], raw) : 0;
                long count = parts.length > 3 ? number(parts[3], raw) : Long.MAX_VALUE;
                rule = new Rule(parts[1].equals("drop") ? Action.DROP : Action.FAIL, skip, count);
            } else {
                throw bad("rule '" + raw + "' must be <point>:halt, <point>:drop[:skip[:count]] or <point>:fail[:skip[:count]]");
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
        if (r != null && r.action == Action.HALT) {
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
        if (r == null || r.action != Action.DROP || !r.hits()) return false;
        System.err.println("IM_FAULT: dropped " + point.wireName());
        return true;
    }

    /**
     * Throws {@link InjectedFailure} if a fail rule names this point and this occurrence is one it
     * fails (counted like {@link #shouldDrop}); prints {@code IM_FAULT: failed <point>} on stderr.
     */
    public void maybeFail(FaultPoint point) {
        Rule r = rules.get(point);
        if (r == null || r.action != Action.FAIL || !r.hits()) return;
        System.err.println("IM_FAULT: failed " + point.wireName());
        throw new InjectedFailure(point);
    }

    /** The unexpected exception a {@code fail} rule throws; nothing catches it by type on purpose. */
    public static final class InjectedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFailure(FaultPoint point) {
            super("IM_FAULT: injected failure at " + point.wireName());
        }
    }

    private enum Action { HALT, DROP, FAIL }

    private static final class Rule {
        final Action action;
        final long skip;
        final long count;
        final AtomicLong seen = new AtomicLong();

        Rule(Action action, long skip, long count) {
            this.action = action;
            this.skip = skip;
            this.count = count;
        }

        /** Counts this occurrence; true if it is one of the {@code count} after the first {@code skip}. */
        boolean hits() {
            long n = seen.getAndIncrement();
            return n >= skip && n - skip < count;
        }
    }
}
