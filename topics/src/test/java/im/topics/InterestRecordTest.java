package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class InterestRecordTest {
    static final InterestRecord REC = new InterestRecord("c-ab", "d-bo",
            new Interest("u-bo", "gw-10e41dff", 1796213357192L, 1796213360101000L, true, 1796213360101L));

    @Test
    void roundTripsTheRecordAndTheStoredForm() {
        assertEquals(REC, InterestRecord.read(REC.toJson()));
        assertEquals(REC.interest(), Interest.read(RouteJson.parse(REC.interest().toStoreJson())));
    }

    @Test
    void writesTheDocumentedValue() {
        assertEquals("{\"v\":2,\"conv\":\"c-ab\",\"device\":\"d-bo\",\"user\":\"u-bo\",\"gateway\":\"gw-10e41dff\","
                + "\"gen\":1796213357192,\"ver\":1796213360101000,\"online\":true,\"at\":1796213360101}", REC.toJson());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device", "user", "gateway", "gen", "ver", "online", "at"})
    void refusesARecordMissingARequiredField(String field) {
        RecordCases.missing(REC.toJson(), field, InterestRecord::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "conv", "device", "user", "gateway", "gen", "ver", "online", "at"})
    void refusesARecordWithAMistypedField(String field) {
        RecordCases.mistyped(REC.toJson(), field, InterestRecord::read);
    }

    @Test
    void refusesTheOldVersionAndAnEmptyDevice() {
        RecordCases.refused(REC.toJson(), o -> o.put("v", 1), "v", InterestRecord::read);
        RecordCases.refused(REC.toJson(), o -> o.put("device", ""), "device", InterestRecord::read);
    }
}
