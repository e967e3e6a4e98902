package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The credential watch against a real database, with sessions it holds given directly: a full pass
 * reads the credentials of the devices held when it starts, and judges only those. A connection
 * that authenticated while the pass read the database (a connect burst: 10,000 devices
 * connecting, the ConnectionsBench run of 2026-12-05 lost 3-4 of them so) is not taken for a
 * removed device; a device that is really gone still is.
 */
@ExtendWith(ImStackExtension.class)
class CredentialWatchIT {
    /** A session that records how it was ended. */
    private record Session(DevicePrincipal principal, List<String> ended) implements CredentialWatch.Held {
        Session(DevicePrincipal principal) {
            this(principal, new ArrayList<>());
        }

        @Override
        public boolean isOpen() {
            return ended.isEmpty();
        }

        @Override
        public void endSession(ErrorCode code, String why) {
            ended.add(code + ": " + why);
        }
    }

    @Test
    void aFullPassJudgesTheSessionsItReadAndNotOneThatAuthenticatedMeanwhile(TestStack stack) throws Exception {
        Fixture fx = new Fixture(stack);
        Session ana = new Session(fx.dir.authenticate(fx.anaToken));
        Session bo = new Session(fx.dir.authenticate(fx.boToken));
        Session gone = new Session(new DevicePrincipal("u-x", "d-gone", 1, 1));
        AtomicInteger calls = new AtomicInteger();
        // The pass lists the held sessions twice (to read their devices, then to judge them); bo
        // authenticates in between.
        CredentialWatch watch = new CredentialWatch(fx.db,
                () -> calls.getAndIncrement() == 0 ? List.of(ana, gone) : List.of(ana, gone, bo), Duration.ofHours(1));
        watch.check();   // the first pass is a full one
        assertEquals(List.of(), bo.ended(), "bo authenticated after the pass read the database: judged by the next pass");
        assertEquals(List.of(), ana.ended());
        assertEquals(List.of("STALE_INSTALL: device d-gone was removed; this connection's session is over"), gone.ended());
        watch.check();
        assertEquals(List.of(), bo.ended(), "a valid session stays");
    }
}
