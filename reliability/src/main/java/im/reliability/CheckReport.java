package im.reliability;

import java.util.List;
import java.util.Map;

/** The checker's verdict: violations (empty = the history is valid) and figures to print. */
public record CheckReport(List<Violation> violations, Map<String, Long> figures) {
    public boolean ok() {
        return violations.isEmpty();
    }
}
