package im.delivery.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.topics.Interest;
import im.topics.RouteJson;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link InterestSet} and the one merge rule of {@link Interest}. */
class InterestSetTest {
    private static Interest on(String user, String gw, long ver, long at) {
        return new Interest(user, gw, 1, ver, true, at);
    }

    private static Interest off(String user, String gw, long ver, long at) {
        return new Interest(user, gw, 1, ver, false, at);
    }

    @Test
    void theHigherVersionWinsWhateverTheArrivalOrder() {
        Interest older = on("u1", "gw-a", 1, 100);
        Interest newer = on("u1", "gw-b", 2, 50);
        assertSame(newer, Interest.merge(older, newer));
        assertSame(newer, Interest.merge(newer, older));
        assertSame(newer, Interest.merge(newer, off("u1", "gw-a", 1, 200)), "an older connection's withdrawal is stale");
    }

    @Test
    void withinOneConnectionAWithdrawalIsFinalAndARenewalRefreshes() {
        Interest first = on("u1", "gw-a", 5, 100);
        Interest renewed = on("u1", "gw-a", 5, 200);
        assertSame(renewed, Interest.merge(first, renewed));
        assertSame(renewed, Interest.merge(renewed, first), "an older renewal does not move at back");
        Interest closed = off("u1", "gw-a", 5, 150);
        assertSame(closed, Interest.merge(renewed, closed));
        assertSame(closed, Interest.merge(closed, on("u1", "gw-a", 5, 300)), "a closed connection never comes back");
        assertTrue(Interest.merge(closed, on("u1", "gw-b", 6, 1)).online(), "a new connection does");
    }

    @Test
    void byGatewayGroupsTheAcceptedDevices() {
        InterestSet s = InterestSet.empty();
        s.apply("d3", on("u3", "gw-b", 1, 0));
        s.apply("d1", on("u1", "gw-a", 1, 0));
        s.apply("d2", on("u2", "gw-a", 1, 0));
        s.apply("d4", off("u4", "gw-a", 1, 0));
        assertEquals(Map.of("gw-a", List.of("d1", "d2"), "gw-b", List.of("d3")), s.byGateway(Interest::online));
        assertEquals(Map.of("gw-a", List.of("d1")), s.byGateway(i -> i.user().equals("u1")));
    }

    @Test
    void jsonRoundTripAndStrictRead() {
        InterestSet s = InterestSet.empty();
        s.apply("d1", on("u1", "gw-a", 7, 11));
        s.apply("d2", off("u2", "gw-b", 3, 12));
        InterestSet back = InterestSet.fromJson(s.toJson());
        assertEquals(s.toJson(), back.toJson());
        assertEquals(on("u1", "gw-a", 7, 11), back.get("d1"));
        assertTrue(back.removeIf((d, i) -> !i.online()));
        assertFalse(back.removeIf((d, i) -> false));
        assertTrue(InterestSet.fromJson(null).isEmpty());
        assertEquals("{}", InterestSet.empty().toJson());
        assertThrows(IllegalArgumentException.class, () -> Interest.read(RouteJson.parse(
                "{\"user\":\"u\",\"gateway\":\"g\",\"gen\":1,\"online\":true,\"at\":1}")), "a missing ver is refused, not read as 0");
    }
}
