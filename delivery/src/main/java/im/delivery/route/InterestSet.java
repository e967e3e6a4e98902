package im.delivery.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.topics.Interest;
import im.topics.RouteJson;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * The registrations of one conversation's devices: device → {@link Interest} (online ones and
 * recent withdrawals, which keep a closed connection from coming back). Stored as JSON in the
 * delivery node's state store (with a changelog), one entry per conversation.
 */
public final class InterestSet {
    private final Map<String, Interest> byDevice;

    private InterestSet(Map<String, Interest> byDevice) {
        this.byDevice = byDevice;
    }

    public static InterestSet empty() {
        return new InterestSet(new TreeMap<>());
    }

    public static InterestSet fromJson(String json) {
        if (json == null) return empty();
        Map<String, Interest> m = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = RouteJson.parse(json).fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            m.put(e.getKey(), Interest.read(e.getValue()));
        }
        return new InterestSet(m);
    }

    public String toJson() {
        ObjectNode o = RouteJson.JSON.createObjectNode();
        byDevice.forEach((d, e) -> e.write(o.putObject(d)));
        return o.toString();
    }

    public boolean isEmpty() {
        return byDevice.isEmpty();
    }

    /** Applies a registration or withdrawal by {@link Interest#merge}. */
    public void apply(String device, Interest incoming) {
        byDevice.put(device, Interest.merge(byDevice.get(device), incoming));
    }

    public Interest get(String device) {
        return byDevice.get(device);
    }

    /** Removes entries the predicate calls garbage; returns whether any was removed. */
    public boolean removeIf(BiPredicate<String, Interest> garbage) {
        return byDevice.entrySet().removeIf(e -> garbage.test(e.getKey(), e.getValue()));
    }

    /** The devices the predicate accepts, grouped by gateway, in a stable order. */
    public Map<String, List<String>> byGateway(Predicate<Interest> route) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        byDevice.forEach((d, e) -> {
            if (route.test(e)) m.computeIfAbsent(e.gateway(), g -> new ArrayList<>()).add(d);
        });
        return m;
    }
}
