package im.client;

import im.client.api.ClientOptions;
import im.client.internal.ClientFaults;
import java.io.IOException;
import java.time.Clock;

/**
 * The tests' door for {@link ClientFaults}: opens an {@link ImClient} whose receive path runs the
 * given hooks. It lives in the SDK's test sources (shipped to other modules' tests in the client's
 * test jar), so the SDK's jar has no way to install hooks; crash tests use it to leave exactly the
 * durable state a killed process would.
 */
public final class FaultInjection {
    private FaultInjection() {
    }

    /** {@link ImClient#open(ClientOptions)} with {@code faults} installed. */
    public static ImClient open(ClientOptions options, ClientFaults faults) throws IOException {
        return ImClient.open(options, Clock.systemUTC(), null, faults);
    }

    /** {@link ImClient#open(ClientOptions, ClientRuntime)} with {@code faults} installed. */
    public static ImClient open(ClientOptions options, ClientFaults faults, ClientRuntime runtime) throws IOException {
        return ImClient.open(options, Clock.systemUTC(), java.util.Objects.requireNonNull(runtime, "runtime"), faults);
    }
}
