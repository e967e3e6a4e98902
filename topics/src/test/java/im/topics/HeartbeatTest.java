package im.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HeartbeatTest {
    static final Heartbeat HB = new Heartbeat("gw-1", 1796213357192L, 1796213360101L);

    @Test
    void roundTrips() {
        assertEquals(HB, Heartbeat.read(HB.toJson()));
        assertEquals("{\"v\":1,\"gateway\":\"gw-1\",\"gen\":1796213357192,\"at\":1796213360101}", HB.toJson());
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "gateway", "gen", "at"})
    void refusesARecordMissingARequiredField(String field) {
        RecordCases.missing(HB.toJson(), field, Heartbeat::read);
    }

    @ParameterizedTest
    @ValueSource(strings = {"v", "gateway", "gen", "at"})
    void refusesARecordWithAMistypedField(String field) {
        RecordCases.mistyped(HB.toJson(), field, Heartbeat::read);
    }
}
