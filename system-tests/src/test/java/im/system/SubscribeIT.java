package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.gateway.RawSocket;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.config.ConfigKeys;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.InterestRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code sub} is idempotent on a connection: a repeated one is answered but publishes no second registration. */
@ExtendWith(ImStackExtension.class)
class SubscribeIT {
    @Test
    void aRepeatedSubOnOneConnectionPublishesEachRegistrationOnce(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        fx.dir.createConversation("c-g1", "group", List.of("u-ana", "u-bo", "u-cy"));
        fx.dir.createConversation("c-g2", "group", List.of("u-ana", "u-cy"));
        // Registrations are never renewed (and no re-send is asked for): every one on the topic comes from a sub.
        try (Pipeline p = new Pipeline(stack, Map.of(ConfigKeys.INTEREST_RENEW_MS.name(), "600000"))) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (RawSocket ana = new RawSocket(Pipeline.ws(gw))) {
                ana.auth(fx.anaToken);
                for (int i = 0; i < 10; i++) {
                    JsonNode subbed = ana.request("{\"t\":\"sub\",\"rid\":\"s" + i + "\"}");
                    while (subbed.path("t").asText().equals("event")) subbed = ana.next();   // a push may come first
                    assertEquals(3, subbed.path("convs").size(), subbed.toString());
                }
            }
            // The close publishes a withdrawal per conversation, on the same partition after every
            // registration of that conversation: once all three are on the topic, so is every
            // registration the subs published.
            Map<String, Integer> registrations = new HashMap<>();
            Await.until(Duration.ofSeconds(20), () -> {
                registrations.clear();
                int withdrawals = 0;
                for (InterestRecord r : interestOf(stack.kafkaBootstrap(), p.topics.interest(), "d-ana")) {
                    if (r.interest().online()) registrations.merge(r.conv(), 1, Integer::sum);
                    else withdrawals++;
                }
                return withdrawals == 3;
            }, "d-ana's withdrawals on the interest topic");
            assertEquals(Map.of("c-ab", 1, "c-g1", 1, "c-g2", 1), registrations, "one registration per conversation, not one per sub");
        }
    }

    /** Every interest record (registration or withdrawal) of {@code device} on the topic, from the beginning to the current end. */
    private static List<InterestRecord> interestOf(String bootstrap, String topic, String device) {
        List<InterestRecord> out = new ArrayList<>();
        for (im.topics.InterestMessage m : InterestDigestIT.interest(bootstrap, topic)) {
            if (m instanceof InterestRecord rec && rec.device().equals(device)) out.add(rec);   // not a digest
        }
        return out;
    }
}
