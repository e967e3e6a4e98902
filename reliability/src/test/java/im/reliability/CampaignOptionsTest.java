package im.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The campaign's options: the standby-pair kinds need the pair; "all kinds" depends on it. */
class CampaignOptionsTest {
    private static Campaign.Options options(List<Nemesis.Kind> kinds, boolean pgStandby) {
        return new Campaign.Options(1, Duration.ofSeconds(10), 4, 2, 1, 1, 1, 5.0, Duration.ofSeconds(2), kinds, 0, 0,
                Duration.ofSeconds(30), Path.of("unused"), 1, pgStandby);
    }

    @Test
    void aStandbyPairKindWithoutThePairIsRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> options(List.of(Nemesis.Kind.PG_CRASH, Nemesis.Kind.PG_FAILOVER), false));
        assertTrue(e.getMessage().contains("PG_FAILOVER needs pgStandby"), e.getMessage());
        assertEquals(List.of(Nemesis.Kind.PG_STANDBY_OUTAGE), options(List.of(Nemesis.Kind.PG_STANDBY_OUTAGE), true).faults());
    }

    @Test
    void allKindsIncludeThePairKindsOnlyWithThePair() {
        List<Nemesis.Kind> single = Nemesis.Kind.all(false);
        assertFalse(single.contains(Nemesis.Kind.PG_FAILOVER) || single.contains(Nemesis.Kind.PG_STANDBY_OUTAGE), single.toString());
        assertTrue(single.contains(Nemesis.Kind.PG_CRASH));
        assertEquals(List.of(Nemesis.Kind.values()), Nemesis.Kind.all(true));
        options(single, false);   // the suite's first campaign: accepted
    }
}
