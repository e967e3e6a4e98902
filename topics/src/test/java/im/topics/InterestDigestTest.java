package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.junit.jupiter.api.Test;

class InterestDigestTest {
    static final InterestDigest DIGEST = new InterestDigest("gw-10e41dff", 1796213357192L, 4, 812, -4172839540213901275L, 1796213362101L);

    @Test
    void roundTripsBesideRegistrationsOnTheInterestTopic() {
        assertEquals(DIGEST, InterestMessage.read(DIGEST.toJson()));
        InterestDigest ending = new InterestDigest("gw-a", 7, 0, 0, 0, 1000, 1001);
        assertEquals(ending, InterestMessage.read(ending.toJson()));
        assertEquals(InterestRecordTest.REC, InterestMessage.read(InterestRecordTest.REC.toJson()));
    }

    @Test
    void writesTheDocumentedValue() {
        assertEquals("{\"v\":2,\"digest\":{\"gateway\":\"gw-10e41dff\",\"gen\":1796213357192,\"partition\":4,\"count\":812,"
                + "\"sum\":-4172839540213901275,\"at\":1796213362101}}", DIGEST.toJson());
    }

    @Test
    void refusesADigestWithAMissingOrImpossibleField() {
        for (String bad : new String[] {
                "{\"v\":2,\"digest\":{\"gen\":1,\"partition\":0,\"count\":0,\"sum\":0,\"at\":1}}",
                "{\"v\":2,\"digest\":{\"gateway\":\"g\",\"gen\":1,\"partition\":-1,\"count\":0,\"sum\":0,\"at\":1}}",
                "{\"v\":2,\"digest\":{\"gateway\":\"g\",\"gen\":1,\"partition\":0,\"count\":-3,\"sum\":0,\"at\":1}}",
                "{\"v\":2,\"digest\":{\"gateway\":\"g\",\"gen\":1,\"partition\":99999999999,\"count\":0,\"sum\":0,\"at\":1}}",
                "{\"v\":2,\"digest\":\"x\"}",
                "{\"v\":3,\"digest\":{\"gateway\":\"g\",\"gen\":1,\"partition\":0,\"count\":0,\"sum\":0,\"at\":1}}"}) {
            assertThrows(MalformedRecordException.class, () -> InterestMessage.read(bad), bad);
        }
    }

    @Test
    void thePartitionIsTheDefaultPartitionersForTheConversationAsAStringKey() {
        for (String conv : new String[] {"c-ab", "grp-10000", "conv-ü", ""}) {
            for (int n : new int[] {1, 3, 12, 64}) {
                assertEquals(BuiltInPartitioner.partitionForKey(conv.getBytes(StandardCharsets.UTF_8), n),
                        InterestDigest.partitionOf(conv, n), conv + " over " + n);
            }
        }
    }

    @Test
    void aTermTellsConversationDeviceAndVersionApart() {
        long t = InterestDigest.term("c1", "d1", 5);
        assertEquals(t, InterestDigest.term("c1", "d1", 5), "the same in every call");
        assertNotEquals(t, InterestDigest.term("c1", "d1", 6));
        assertNotEquals(t, InterestDigest.term("d1", "c1", 5));
        assertNotEquals(t, InterestDigest.term("c1", "d2", 5));
    }

    @Test
    void aResyncRequestRoundTripsOnTheChannel() {
        ChannelRecord.Resync r = new ChannelRecord.Resync(4, 1796213357192L);
        assertEquals("{\"v\":1,\"resync\":{\"partition\":4,\"gen\":1796213357192}}", r.toJson());
        assertEquals(r, ChannelRecord.read(r.toJson()));
        assertThrows(MalformedRecordException.class, () -> ChannelRecord.read("{\"v\":1,\"resync\":{\"partition\":-1,\"gen\":1}}"));
    }
}
