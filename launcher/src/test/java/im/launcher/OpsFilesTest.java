package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The check behind OpsMetricsIT reports what a scrape lacks, and the ops files parse. */
class OpsFilesTest {
    private static final String SCRAPE = """
            # HELP im_sweeper_lagging_over x
            im_sweeper_lagging_over{over="10s"} 0.0
            im_sweeper_lagging_over{over="60s"} 0.0
            im_delivery_latency_seconds_bucket{gateway="gw-1",le="5.0"} 3
            im_relay_active{slot="s"} 1.0
            """;

    @Test
    void aNameOrALabelValueTheScrapeLacksIsReported() {
        List<String> exprs = List.of(
                "sum(im_sweeper_lagging_over{over=\"60s\"}) > 0 and sum(im_relay_active) < 1",
                "sum(rate(im_delivery_latency_seconds_bucket{le=\"5.0\"}[5m]))",
                "max by (group) (kafka_consumer_fetch_manager_records_lag_max{group=~\".*delivery\"}) > 1 or up == 0");
        assertEquals(Set.of("kafka_consumer_fetch_manager_records_lag_max"), OpsFiles.missing(exprs, SCRAPE));
        assertEquals(Set.of("im_sweeper_lagging_over{over=\"600s\"}", "im_delivery_latency_seconds_bucket{le=\"5\"}", "im_no_such"),
                OpsFiles.missing(List.of("im_sweeper_lagging_over{over=\"600s\"} + im_delivery_latency_seconds_bucket{le=\"5\"}",
                        "rate(im_no_such[1m])"), SCRAPE));
    }

    @Test
    void theAlertRulesAndTheDashboardParseAndNameOurMetrics() throws Exception {
        Path root = OpsFiles.root();
        List<String> exprs = OpsFiles.expressions(root);
        assertTrue(exprs.size() > 30, "rules and panel queries: " + exprs.size());
        Set<String> names = OpsFiles.names(exprs);
        for (String n : List.of("im_delivery_latency_seconds_bucket", "im_sweeper_lagging_over", "im_relay_slot_retained_wal_bytes",
                "kafka_consumer_fetch_manager_records_lag_max", "im_sweeper_repairs_total", "im_sweeper_hints_total")) {
            assertTrue(names.contains(n), n + " in " + names);
        }
    }
}
