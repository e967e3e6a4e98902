package im.delivery.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.ArrayList;

/**
 * The online devices of one conversation: device → (user, gateway, generation). Stored as JSON in
 * the delivery node's state store (with a changelog), one entry per conversation.
 */
public final class InterestSet {
    /** Where one device is online. */
    public record Entry(String user, String gateway, long gen) {}

    private final Map<String, Entry> byDevice;

    private InterestSet(Map<String, Entry> byDevice) {
        this.byDevice = byDevice;
    }

    public static InterestSet empty() {
        return new InterestSet(new TreeMap<>());
    }

    public static InterestSet fromJson(String json) {
        if (json == null) return empty();
        Map<String, Entry> m = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = RouteJson.parse(json).fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            m.put(e.getKey(), new Entry(v.get("user").asText(), v.get("gateway").asText(), v.get("gen").asLong()));
        }
        return new InterestSet(m);
    }

    public String toJson() {
        ObjectNode o = RouteJson.JSON.createObjectNode();
        byDevice.forEach((d, e) -> o.putObject(d).put("user", e.user()).put("gateway", e.gateway()).put("gen", e.gen()));
        return o.toString();
    }

    public boolean isEmpty() {
        return byDevice.isEmpty();
    }

    public void online(String device, Entry entry) {
        byDevice.put(device, entry);
    }

    /** Removes the device unless a newer registration (another gateway or generation) replaced it. */
    public void offline(String device, String gateway, long gen) {
        Entry e = byDevice.get(device);
        if (e != null && e.gateway().equals(gateway) && e.gen() <= gen) byDevice.remove(device);
    }

    public void removeUser(String user) {
        byDevice.values().removeIf(e -> e.user().equals(user));
    }

    /** Removes entries whose gateway is not alive (per the given test); returns whether any was removed. */
    public boolean retainAlive(java.util.function.BiPredicate<String, Long> alive) {
        return byDevice.values().removeIf(e -> !alive.test(e.gateway(), e.gen()));
    }

    /** Devices grouped by gateway, in a stable order. */
    public Map<String, List<String>> byGateway() {
        Map<String, List<String>> m = new LinkedHashMap<>();
        byDevice.forEach((d, e) -> m.computeIfAbsent(e.gateway(), g -> new ArrayList<>()).add(d));
        return m;
    }
}
