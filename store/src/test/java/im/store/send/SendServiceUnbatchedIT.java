package im.store.send;

import im.infra.fault.Faults;
import java.time.Clock;

/** Every test of {@link SendServiceIT} with {@code IM_SEND_LANES=0}: each send in a transaction of its own (the per-send statements). */
class SendServiceUnbatchedIT extends SendServiceIT {
    @Override
    SendService newSendService() {
        return new SendService(db, Faults.none(), Clock.systemUTC(), 0, 1);
    }
}
