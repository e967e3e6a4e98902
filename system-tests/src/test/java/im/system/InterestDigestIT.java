package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.RawSocket;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.InterestDigest;
import im.topics.InterestMessage;
import im.topics.InterestRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The gateway's interest upkeep: an idle gateway writes one digest per partition of the interest
 * topic per interval, never its registrations again, whatever the number of conversations; and a
 * registration lost on its way is found by the digest and written again, so the device gets its
 * pushes without reconnecting. Issue 25, goal 2.
 */
@ExtendWith(ImStackExtension.class)
class InterestDigestIT {
    private static final int GROUPS = 30;

    @Test
    void anIdleGatewayWritesADigestPerPartitionAndNoRegistrationTwice(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        for (int i = 0; i < GROUPS; i++) fx.dir.createConversation("c-g" + i, "group", List.of("u-ana", "u-bo"));
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.INTEREST_RENEW_MS.name(), "200"))) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (RawSocket ana = new RawSocket(Pipeline.ws(gw))) {
                ana.auth(fx.anaToken);
                JsonNode subbed = ana.request("{\"t\":\"sub\",\"rid\":\"s1\"}");
                assertEquals(GROUPS + 1, subbed.path("convs").size(), subbed.toString());
                // Ten intervals of digests after the sub: with renewals there would be ten
                // registrations per conversation by then.
                List<InterestMessage> seen = new ArrayList<>();
                Await.until(Duration.ofSeconds(30), () -> {
                    seen.clear();
                    seen.addAll(interest(stack.kafkaBootstrap(), p.topics.interest()));
                    return seen.stream().filter(m -> m instanceof InterestDigest d && d.gateway().equals("gw-a"))
                            .count() >= 10L * 3 + 3;
                }, "ten rounds of gw-a's digests");
                Map<String, Integer> registrations = new HashMap<>();
                Map<Integer, long[]> published = new HashMap<>();   // partition -> count, sum of what gw-a wrote
                Map<Integer, InterestDigest> lastDigest = new HashMap<>();
                for (InterestMessage m : seen) {
                    if (m instanceof InterestRecord r && r.interest().online()) {
                        registrations.merge(r.conv(), 1, Integer::sum);
                        long[] cs = published.computeIfAbsent(InterestDigest.partitionOf(r.conv(), 3), k -> new long[2]);
                        cs[0]++;
                        cs[1] += r.digestTerm();
                    } else if (m instanceof InterestDigest d && d.gateway().equals("gw-a")) {
                        lastDigest.put(d.partition(), d);
                    }
                }
                assertEquals(GROUPS + 1, registrations.size(), "every conversation registered: " + registrations);
                assertTrue(registrations.values().stream().allMatch(n -> n == 1), "each registration written once: " + registrations);
                assertEquals(3, lastDigest.size(), "a digest for every partition, also an empty one");
                lastDigest.forEach((part, d) -> {
                    long[] cs = published.getOrDefault(part, new long[2]);
                    assertTrue(d.agrees(cs[0], cs[1]), "partition " + part + ": digest " + d + " agrees with the registrations on it");
                });
            }
        }
    }

    @Test
    void aRegistrationLostOnItsWayIsWrittenAgainAndThePushArrivesWithoutAReconnect(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        // gw.interest:drop:0:1: the first registration this gateway publishes never reaches Kafka.
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.INTEREST_RENEW_MS.name(), "300"))) {
            Gateway gw = p.addGateway("gw-a", "gw.interest:drop:0:1");
            p.awaitRunning();
            try (RawSocket ana = new RawSocket(Pipeline.ws(gw)); RawSocket bo = new RawSocket(Pipeline.ws(gw))) {
                ana.auth(fx.anaToken);
                assertEquals(1, ana.request("{\"t\":\"sub\",\"rid\":\"s1\"}").path("convs").size());
                bo.auth(fx.boToken);
                bo.request("{\"t\":\"sub\",\"rid\":\"s1\"}");
                // ana's registration was lost: a message now is not pushed to it; the digests find
                // the loss and the gateway writes the partition again; a later message is pushed.
                Await.until(Duration.ofSeconds(30), () -> sendAndSeePush(bo, ana), "a push to ana without a reconnect");
                assertTrue(gw.pushResends() >= 1, "the gateway wrote a partition again");
            }
        }
    }

    /** {@code from} sends to c-ab; whether {@code to} gets that message pushed within a second. */
    private static boolean sendAndSeePush(RawSocket from, RawSocket to) {
        try {
            String cmid = "m" + System.nanoTime();
            JsonNode sent = from.request("{\"t\":\"send\",\"rid\":\"" + cmid + "\",\"conv\":\"c-ab\",\"cmid\":\"" + cmid + "\",\"body\":\"hi\"}");
            while (!sent.path("t").asText().equals("sent")) sent = from.next();
            long seq = sent.path("seq").asLong();
            JsonNode f = to.poll(Duration.ofSeconds(1));
            while (f != null && !(f.path("t").asText().equals("event") && f.path("ev").path("seq").asLong() == seq)) {
                f = to.poll(Duration.ofSeconds(1));
            }
            return f != null;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every record on the interest topic, from the beginning to the current end. */
    static List<InterestMessage> interest(String bootstrap, String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<InterestMessage> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new AssertionError("could not read " + topic + " to its end " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    InterestMessage m = InterestMessage.read(r.value());
                    if (m instanceof InterestDigest d) {
                        assertEquals(d.partition(), r.partition(), "a digest is on the partition it describes");
                    } else if (m instanceof InterestRecord rec) {
                        assertEquals(InterestDigest.partitionOf(rec.conv(), parts.size()), r.partition(),
                                "a registration is on its conversation's partition");
                    }
                    out.add(m);
                }
            }
        }
        return out;
    }
}
