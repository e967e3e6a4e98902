package im.infra.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultsTest {
    @Test
    void theDocOfImFaultListsExactlyThePoints() {
        String doc = ConfigKeys.FAULT.doc();
        String listed = doc.substring(doc.indexOf("Points: ") + "Points: ".length(), doc.length() - 1);
        assertEquals(FaultPoint.names(), List.of(listed.split(", ")), "the IM_FAULT doc spells out every point, in order");
    }

    @Test
    void dropSkipThenCount() {
        Faults f = Faults.parse("gw.reply.send:drop:2:3");
        List<Boolean> seen = new ArrayList<>();
        for (int i = 0; i < 7; i++) seen.add(f.shouldDrop(FaultPoint.GW_REPLY_SEND));
        assertEquals(List.of(false, false, true, true, true, false, false), seen);
    }

    @Test
    void seedRuleDropsExactlyTheFirst() {
        Faults f = Faults.parse("gw.reply.send:drop:0:1");
        assertTrue(f.shouldDrop(FaultPoint.GW_REPLY_SEND));
        assertFalse(f.shouldDrop(FaultPoint.GW_REPLY_SEND));
        assertFalse(f.shouldDrop(FaultPoint.GW_PUSH), "other points untouched");
    }

    @Test
    void dropWithoutCountDropsAll() {
        Faults f = Faults.parse("gw.push:drop");
        for (int i = 0; i < 100; i++) assertTrue(f.shouldDrop(FaultPoint.GW_PUSH));
    }

    @Test
    void failThrowsForTheCountedOccurrencesOnlyAndNeverDropsOrHalts() {
        Faults f = Faults.parse("send.before_insert:fail:1:2");
        f.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        assertThrows(Faults.InjectedFailure.class, () -> f.maybeFail(FaultPoint.SEND_BEFORE_INSERT));
        assertThrows(Faults.InjectedFailure.class, () -> f.maybeFail(FaultPoint.SEND_BEFORE_INSERT));
        f.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        f.maybeHalt(FaultPoint.SEND_BEFORE_INSERT);   // a fail rule is not a halt rule
        assertFalse(f.shouldDrop(FaultPoint.SEND_BEFORE_INSERT));
        Faults.parse("gw.push:drop").maybeFail(FaultPoint.GW_PUSH);   // nor is a drop rule a fail rule
    }

    @Test
    void emptyMeansOff() {
        assertTrue(Faults.parse("").isEmpty());
        assertTrue(Faults.parse(null).isEmpty());
        assertFalse(Faults.parse("  ").shouldDrop(FaultPoint.GW_PUSH));
    }

    @Test
    void mistakesAreConfigErrorsNamingImFault() {
        for (String bad : List.of("nowhere:halt", "gw.push", "gw.push:explode", "gw.push:drop:x", "gw.push:drop:-1",
                "send.before_insert:halt:1", "gw.push:drop,gw.push:drop", "send.before_insert:fail:x", "gw.push:fail:1:2:3")) {
            ConfigException e = assertThrows(ConfigException.class, () -> Faults.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("IM_FAULT:"), e.getMessage());
        }
    }
}
