package im.topics;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What the topic records share: the one {@link ObjectMapper}, the header that names a routed
 * record's destination, and a JSON parse for the roles' internal state-store values. Every topic
 * record has its own type and strict reader: {@link EventRecord}, {@link CursorRecord},
 * {@link InterestRecord}, {@link Heartbeat}, {@link MembershipNotice}, {@link ChannelRecord}.
 */
public final class RouteJson {
    public static final ObjectMapper JSON = new ObjectMapper();
    /** Header of a routed record (delivery or sweeper output): the channel topic it goes to. */
    public static final String DEST_HEADER = "im-dest";

    private RouteJson() {}

    /** Parses a state-store value (internal, not a topic record); {@link IllegalArgumentException} if not JSON. */
    public static JsonNode parse(String s) {
        try {
            return JSON.readTree(s);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
        }
    }
}
