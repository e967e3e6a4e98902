package im.bench;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.TreeMap;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Requests the embedded broker (in this JVM) handled, by type, from its request metrics
 * ({@code kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*}): how many
 * Produce, Fetch, transaction requests... a window of load cost, beside its CPU.
 */
final class BrokerRequests {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    private BrokerRequests() {
    }

    /** Requests handled so far, by type (all versions together). */
    static Map<String, Long> now() {
        Map<String, Long> byType = new TreeMap<>();
        try {
            for (ObjectName n : SERVER.queryNames(new ObjectName("kafka.network:type=RequestMetrics,name=RequestsPerSec,*"), null)) {
                Object count = SERVER.getAttribute(n, "Count");
                if (count instanceof Number c) byType.merge(n.getKeyProperty("request"), c.longValue(), Long::sum);
            }
        } catch (JMException e) {
            throw new IllegalStateException("cannot read the broker's request metrics", e);
        }
        return byType;
    }

    /** The busiest request types between two snapshots, per 1,000 {@code units}, e.g. " Produce=812 Fetch=640". */
    static String per1000(Map<String, Long> a, Map<String, Long> b, long units, int k) {
        Map<String, Long> diff = new TreeMap<>();
        b.forEach((type, n) -> diff.put(type, n - a.getOrDefault(type, 0L)));
        StringBuilder sb = new StringBuilder();
        long total = diff.values().stream().mapToLong(Long::longValue).sum();
        sb.append(String.format(java.util.Locale.ROOT, " all=%.0f", 1000.0 * total / units));
        diff.entrySet().stream().filter(e -> e.getValue() > 0).sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(k)
                .forEach(e -> sb.append(String.format(java.util.Locale.ROOT, " %s=%.0f", e.getKey(), 1000.0 * e.getValue() / units)));
        return sb.toString();
    }
}
