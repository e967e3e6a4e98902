package im.topics;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collection;

/**
 * The JSON of the routing topics, written and read in one place. Values (docs/topics.md):
 * <ul>
 *   <li>interest (key conv): {@code {"v":2,"conv","device","user","gateway","gen","ver","online","at"}}</li>
 *   <li>gateway channel: {@code {"v":1,"devices":[...],"ev":{event}}} or {@code {"v":1,"devices":[...],"hint":{conv,head,why}}}</li>
 *   <li>notices: {@code {"v":1,"kind":"join"|"leave","user","ev":{event}}}</li>
 *   <li>gateways (key gateway): {@code {"v":1,"gateway","gen","at"}}</li>
 * </ul>
 */
public final class RouteJson {
    public static final ObjectMapper JSON = new ObjectMapper();
    /** Header of a routed record (delivery or sweeper output): the channel topic it goes to. */
    public static final String DEST_HEADER = "im-dest";

    private RouteJson() {}

    public static JsonNode parse(String s) {
        try {
            return JSON.readTree(s);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
        }
    }

    /** An interest record ({@code v:2}): see {@link Interest}. */
    public static String interest(String conv, String device, Interest i) {
        return i.toRecordJson(conv, device);
    }

    public static String heartbeat(String gateway, long gen, long at) {
        return JSON.createObjectNode().put("v", 1).put("gateway", gateway).put("gen", gen).put("at", at).toString();
    }

    public static String channelEvent(Collection<String> devices, JsonNode event) {
        return channelEvent(devices, java.util.Map.of(), event);
    }

    /**
     * A push for these devices; {@code from} gives, per device, the first seq of its user's
     * current period per the conversation's log, so the gateway can apply a join whose notice
     * (on another topic) has not reached it yet.
     */
    public static String channelEvent(Collection<String> devices, java.util.Map<String, Long> from, JsonNode event) {
        ObjectNode o = JSON.createObjectNode().put("v", 1);
        ArrayNode d = o.putArray("devices");
        devices.forEach(d::add);
        if (!from.isEmpty()) {
            ObjectNode f = o.putObject("from");
            from.forEach(f::put);
        }
        o.set("ev", event);
        return o.toString();
    }

    public static String channelHint(Collection<String> devices, String conv, long head, String why) {
        ObjectNode o = JSON.createObjectNode().put("v", 1);
        ArrayNode d = o.putArray("devices");
        devices.forEach(d::add);
        o.putObject("hint").put("conv", conv).put("head", head).put("why", why);
        return o.toString();
    }

    /** A membership notice: {@code kind} is {@code join} or {@code leave}, {@code user} the member. */
    public static String membershipNotice(String kind, String user, JsonNode event) {
        ObjectNode o = JSON.createObjectNode().put("v", 1).put("kind", kind).put("user", user);
        o.set("ev", event);
        return o.toString();
    }
}
