package im.delivery.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link InterestSet}: the per-conversation online devices kept by the delivery node. */
class InterestSetTest {

    private static InterestSet of(Object... deviceUserGatewayGen) {
        InterestSet s = InterestSet.empty();
        for (int i = 0; i < deviceUserGatewayGen.length; i += 4) {
            s.online((String) deviceUserGatewayGen[i], new InterestSet.Entry((String) deviceUserGatewayGen[i + 1],
                    (String) deviceUserGatewayGen[i + 2], ((Number) deviceUserGatewayGen[i + 3]).longValue()));
        }
        return s;
    }

    @Test
    void byGatewayGroupsDevicesPerGateway() {
        InterestSet s = of("d3", "u3", "gw-b", 1, "d1", "u1", "gw-a", 1, "d2", "u2", "gw-a", 1);
        assertEquals(Map.of("gw-a", List.of("d1", "d2"), "gw-b", List.of("d3")), s.byGateway());
    }

    @Test
    void onlineReplacesTheDevicesPreviousRegistration() {
        InterestSet s = of("d1", "u1", "gw-a", 1, "d1", "u1", "gw-b", 3);
        assertEquals(Map.of("gw-b", List.of("d1")), s.byGateway());
    }

    @Test
    void offlineRemovesOnlyAMatchingGatewayWithSameOrNewerGen() {
        InterestSet s = of("d1", "u1", "gw-a", 2);
        s.offline("d1", "gw-a", 1);          // older generation: stale
        s.offline("d1", "gw-b", 5);          // another gateway: stale
        s.offline("d9", "gw-a", 2);          // unknown device: no-op
        assertEquals(Map.of("gw-a", List.of("d1")), s.byGateway());
        s.offline("d1", "gw-a", 2);
        assertTrue(s.isEmpty());
        s = of("d1", "u1", "gw-a", 2);
        s.offline("d1", "gw-a", 3);          // a newer generation of the same gateway also removes it
        assertTrue(s.isEmpty());
    }

    @Test
    void removeUserDropsAllOfTheUsersDevices() {
        InterestSet s = of("d1", "u1", "gw-a", 1, "d2", "u1", "gw-b", 1, "d3", "u2", "gw-a", 1);
        s.removeUser("u1");
        assertEquals(Map.of("gw-a", List.of("d3")), s.byGateway());
    }

    @Test
    void retainAliveReportsWhetherSomethingWasRemoved() {
        InterestSet s = of("d1", "u1", "gw-a", 1, "d2", "u2", "gw-b", 2);
        assertFalse(s.retainAlive((gw, gen) -> true));
        assertTrue(s.retainAlive((gw, gen) -> !(gw.equals("gw-b") && gen == 2)));
        assertEquals(Map.of("gw-a", List.of("d1")), s.byGateway());
        assertTrue(s.retainAlive((gw, gen) -> false));
        assertTrue(s.isEmpty());
    }

    @Test
    void jsonRoundTrip() {
        InterestSet s = of("d1", "u1", "gw-a", 7, "d2", "u2", "gw-b", 1);
        InterestSet back = InterestSet.fromJson(s.toJson());
        assertEquals(s.toJson(), back.toJson());
        assertEquals(s.byGateway(), back.byGateway());
        back.removeUser("u1");                // users survive the round trip
        assertEquals(Map.of("gw-b", List.of("d2")), back.byGateway());
        back.offline("d2", "gw-b", 0);        // and generations (0 < 1: stale)
        assertFalse(back.isEmpty());
        assertTrue(InterestSet.fromJson(null).isEmpty());
        assertEquals("{}", InterestSet.empty().toJson());
    }
}
