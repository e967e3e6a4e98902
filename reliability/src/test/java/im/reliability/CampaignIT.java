package im.reliability;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small randomized fault campaign: 6 users (2 with two devices), 4 conversations (group and
 * 1:1), 10 sends/s for at least 40 s, a fault every ~6 s taken in rounds over broker kill,
 * PostgreSQL crash, delivery-node and gateway restarts and client disconnects (the run lasts until
 * each was injected once), two membership changes; the checker must find no violation. Seed from {@code -Dcampaign.seed}, else fixed.
 */
class CampaignIT {
    @Test
    void smallCampaignHasNoViolations(@TempDir Path dir) throws Exception {
        long seed = Long.getLong("campaign.seed", 20260501L);
        List<Nemesis.Kind> kinds = List.of(Nemesis.Kind.BROKER_KILL, Nemesis.Kind.PG_CRASH, Nemesis.Kind.GATEWAY_RESTART,
                Nemesis.Kind.CLIENT_DISCONNECT, Nemesis.Kind.DELIVERY_RESTART);
        Campaign.Result r = Campaign.run(new Campaign.Options(seed, Duration.ofSeconds(40), 6, 2, 2, 2, 2, 10.0,
                Duration.ofSeconds(6), kinds, 2, Duration.ofSeconds(90), dir));
        System.out.println("campaign figures (seed " + seed + "): " + r.figures());
        Set<Nemesis.Kind> injected = EnumSet.noneOf(Nemesis.Kind.class);
        r.faults().forEach(f -> injected.add(f.kind()));
        assertTrue(r.figures().get("sends.sent") > 100, "sends flowed: " + r.figures());
        assertTrue(injected.containsAll(List.of(Nemesis.Kind.BROKER_KILL, Nemesis.Kind.PG_CRASH,
                Nemesis.Kind.GATEWAY_RESTART, Nemesis.Kind.CLIENT_DISCONNECT)), "faults injected: " + injected);
        assertTrue(r.ok(), "violations: " + r.report().violations());
    }
}
