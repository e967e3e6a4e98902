package im.topics;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A record of a gateway's channel {@code <prefix>gw.<gatewayId>} ({@code v:1}, internal): an
 * event to push to some of the gateway's devices ({@link Push}, written by the delivery nodes) or
 * a hint for them ({@link HintFor}, written by the sweeper), or a request to re-send the
 * registrations the gateway holds in one partition of the interest topic ({@link Resync}, written
 * by a delivery node or the sweeper whose store disagrees with the gateway's {@link InterestDigest}),
 * or a {@code typing} for them ({@link TypingFor}, written by the delivery nodes).
 */
public sealed interface ChannelRecord permits ChannelRecord.Push, ChannelRecord.HintFor, ChannelRecord.Resync, ChannelRecord.TypingFor {
    /** Schema version written as {@code "v"}. */
    int VERSION = 1;

    /** The devices of this gateway the record is for; never empty for a push or a hint. */
    List<String> devices();

    String toJson();

    /**
     * Push {@code ev} to {@code devices}; {@code from} gives, per device, the first seq of its
     * user's current period per the conversation's log, so the gateway can apply a join whose
     * notice (on another topic) has not reached it yet. Devices may be missing from it.
     */
    record Push(List<String> devices, Map<String, Long> from, EventRecord ev) implements ChannelRecord {
        public Push {
            devices = List.copyOf(devices);
            from = Map.copyOf(from);
            Objects.requireNonNull(ev, "ev");
        }

        @Override
        public String toJson() {
            ObjectNode o = start(devices);
            if (!from.isEmpty()) {
                ObjectNode f = o.putObject("from");
                new java.util.TreeMap<>(from).forEach(f::put);
            }
            o.set("ev", ev.toJsonNode());
            return o.toString();
        }
    }

    /** Hint {@code devices} that {@code conv} has events up to {@code head} ({@code why}: e.g. {@code sweep}). */
    record HintFor(List<String> devices, String conv, long head, String why) implements ChannelRecord {
        public HintFor {
            devices = List.copyOf(devices);
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(why, "why");
        }

        @Override
        public String toJson() {
            ObjectNode o = start(devices);
            o.putObject("hint").put("conv", conv).put("head", head).put("why", why);
            return o.toString();
        }
    }

    /** Tell {@code devices} that {@code user} is typing in {@code conv} (ephemeral, see {@link TypingRecord}). */
    record TypingFor(List<String> devices, String conv, String user) implements ChannelRecord {
        public TypingFor {
            devices = List.copyOf(devices);
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(user, "user");
        }

        @Override
        public String toJson() {
            ObjectNode o = start(devices);
            o.putObject("typing").put("conv", conv).put("user", user);
            return o.toString();
        }
    }

    /**
     * Re-send every registration of generation {@code gen} in partition {@code partition} of the
     * interest topic, then a digest that ends the re-send ({@link InterestDigest#since}).
     */
    record Resync(int partition, long gen) implements ChannelRecord {
        @Override
        public List<String> devices() {
            return List.of();
        }

        @Override
        public String toJson() {
            ObjectNode o = RouteJson.JSON.createObjectNode().put("v", VERSION);
            o.putObject("resync").put("partition", partition).put("gen", gen);
            return o.toString();
        }
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    static ChannelRecord read(String json) {
        Fields f = Fields.parse("channel record", json).version(VERSION);
        if (f.has("resync")) {
            Fields r = Fields.of("channel resync", f.object("resync"));
            long partition = r.integral("partition");
            if (partition < 0 || partition > Integer.MAX_VALUE) throw new MalformedRecordException("channel resync", "field 'partition' is out of range");
            return new Resync((int) partition, r.integral("gen"));
        }
        List<String> devices = f.ids("devices");
        if ((f.has("ev") ? 1 : 0) + (f.has("hint") ? 1 : 0) + (f.has("typing") ? 1 : 0) != 1) {
            throw new MalformedRecordException("channel record", "needs exactly one of 'ev', 'hint' and 'typing'");
        }
        if (f.has("typing")) {
            Fields t = Fields.of("channel typing", f.object("typing"));
            return new TypingFor(devices, t.id("conv"), t.id("user"));
        }
        if (f.has("hint")) {
            Fields h = Fields.of("channel hint", f.object("hint"));
            return new HintFor(devices, h.id("conv"), h.integral("head"), h.id("why"));
        }
        return new Push(devices, f.optionalLongs("from"), EventRecord.read(f.object("ev")));
    }

    private static ObjectNode start(List<String> devices) {
        ObjectNode o = RouteJson.JSON.createObjectNode().put("v", VERSION);
        ArrayNode d = o.putArray("devices");
        devices.forEach(d::add);
        return o;
    }
}
