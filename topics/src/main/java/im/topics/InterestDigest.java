package im.topics;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.apache.kafka.common.utils.Utils;

/**
 * A gateway's digest of the online registrations it holds in one partition of the interest topic
 * ({@link InterestMessage}), written to that partition every {@code IM_INTEREST_RENEW_MS}: how
 * many, and the sum of their {@link #term}s. It replaces re-publishing every registration: a
 * delivery node or sweeper compares it with the same digest of what its store holds for that
 * gateway, and asks for the partition's registrations only when the two differ (a registration
 * or withdrawal was lost), so renewal costs O(gateways × partitions), not O(devices ×
 * conversations).
 *
 * <p>{@code since ≥ 0} marks the end of such a re-send: every registration the gateway holds in the
 * partition was written again at or after {@code since} (gateway clock), so an online registration
 * of this gateway generation with an older {@code at} is one the gateway no longer holds.
 *
 * @param count online registrations (one per (conversation, device), the newest connection's)
 * @param sum   the sum (mod 2^64) of their {@link #term}s
 * @param since -1, or the start of the re-send this digest ends
 */
public record InterestDigest(String gateway, long gen, int partition, long count, long sum, long since, long at)
        implements InterestMessage {

    public InterestDigest {
        Objects.requireNonNull(gateway, "gateway");
    }

    /** A digest that ends no re-send. */
    public InterestDigest(String gateway, long gen, int partition, long count, long sum, long at) {
        this(gateway, gen, partition, count, sum, -1, at);
    }

    /** Whether {@code count} and {@code sum} are those of {@code other} (a gateway's and a store's view). */
    public boolean agrees(long otherCount, long otherSum) {
        return count == otherCount && sum == otherSum;
    }

    /**
     * The term of one online registration: a 64-bit mix of (conversation, device, connection
     * version), the same in every process (UTF-8 bytes, murmur2 and a SplitMix64 finaliser).
     */
    public static long term(String conv, String device, long ver) {
        byte[] c = conv.getBytes(StandardCharsets.UTF_8);
        byte[] d = device.getBytes(StandardCharsets.UTF_8);
        long h = ((long) Utils.murmur2(c) << 32) ^ (Utils.murmur2(d) & 0xffffffffL);
        h ^= ver * 0x9E3779B97F4A7C15L;
        h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
        h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
        return h ^ (h >>> 31);
    }

    /**
     * The partition of the interest topic (and of every conversation-keyed topic) a conversation's
     * records go to: Kafka's own rule for a string key (murmur2 of its UTF-8 bytes), so a gateway
     * that names the partition explicitly puts a registration where the default partitioner would.
     */
    public static int partitionOf(String conv, int partitions) {
        return Utils.toPositive(Utils.murmur2(conv.getBytes(StandardCharsets.UTF_8))) % partitions;
    }

    /** A running count and sum of terms, as a gateway and a Streams task each keep one (not thread-safe). */
    public static class Tally {
        private long count;
        private long sum;

        public void add(long term) {
            count++;
            sum += term;
        }

        public void remove(long term) {
            count--;
            sum -= term;
        }

        public long count() {
            return count;
        }

        public long sum() {
            return sum;
        }

        /** Restores a stored tally. */
        protected void set(long count, long sum) {
            this.count = count;
            this.sum = sum;
        }
    }

    static InterestDigest read(Fields f) {
        long partition = f.integral("partition");
        if (partition < 0 || partition > Integer.MAX_VALUE) throw new MalformedRecordException("interest digest", "field 'partition' is out of range");
        long count = f.integral("count");
        if (count < 0) throw new MalformedRecordException("interest digest", "field 'count' is negative");
        long since = f.has("since") ? f.integral("since") : -1;
        return new InterestDigest(f.id("gateway"), f.integral("gen"), (int) partition, count, f.integral("sum"), since, f.integral("at"));
    }

    @Override
    public String toJson() {
        ObjectNode o = RouteJson.JSON.createObjectNode().put("v", VERSION);
        ObjectNode d = o.putObject("digest").put("gateway", gateway).put("gen", gen).put("partition", partition)
                .put("count", count).put("sum", sum).put("at", at);
        if (since >= 0) d.put("since", since);
        return o.toString();
    }
}
