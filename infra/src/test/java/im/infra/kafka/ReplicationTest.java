package im.infra.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigException;
import im.infra.config.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReplicationTest {
    @Test
    void theDefaultIsOneReplica() {
        assertEquals(Replication.SINGLE, Replication.from(Settings.of(Map.of())));
        assertEquals(1, Replication.SINGLE.minInsyncReplicas());
    }

    @Test
    void minInsyncIsOneLessThanTheFactorAndAtLeastOne() {
        assertEquals(1, new Replication(2).minInsyncReplicas());
        assertEquals(2, Replication.from(Settings.of(Map.of("IM_REPLICATION_FACTOR", "3"))).minInsyncReplicas());
        assertEquals(4, new Replication(5).minInsyncReplicas());
    }

    @Test
    void aFactorAboveTheRegisteredBrokersIsRefusedNamingTheKey() {
        new Replication(3).checkFits(3, "b:1");
        ConfigException e = assertThrows(ConfigException.class, () -> new Replication(3).checkFits(1, "b:1"));
        assertTrue(e.getMessage().startsWith("IM_REPLICATION_FACTOR: is 3, but the cluster at b:1 has 1 registered broker"), e.getMessage());
    }

    @Test
    void zeroIsRefusedAtStart() {
        assertThrows(ConfigException.class, () -> Replication.from(Settings.of(Map.of("IM_REPLICATION_FACTOR", "0"))));
    }
}
