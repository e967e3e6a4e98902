package im.client.internal;

import im.client.ClientOptions;
import im.client.ImClient;
import java.io.IOException;
import java.time.Clock;

/**
 * The test-only door for {@link ClientFaults}: opens an {@link ImClient} whose receive path runs
 * the given hooks. Not part of the SDK's API (nothing in {@code im.client} mentions it); crash
 * tests use it to leave exactly the durable state a killed process would.
 */
public final class FaultInjection {
    /** The hooks for the {@link ImClient#open} running on this thread inside {@link #open}. */
    private static final ThreadLocal<ClientFaults> OPENING = new ThreadLocal<>();

    private FaultInjection() {
    }

    /** {@link ImClient#open(ClientOptions)} with {@code faults} installed. */
    public static ImClient open(ClientOptions options, ClientFaults faults) throws IOException {
        OPENING.set(java.util.Objects.requireNonNull(faults, "faults"));
        try {
            return ImClient.open(options, Clock.systemUTC());
        } finally {
            OPENING.remove();
        }
    }

    /** {@link ImClient#open(ClientOptions, im.client.ClientRuntime)} with {@code faults} installed. */
    public static ImClient open(ClientOptions options, ClientFaults faults, im.client.ClientRuntime runtime) throws IOException {
        OPENING.set(java.util.Objects.requireNonNull(faults, "faults"));
        try {
            return ImClient.open(options, runtime);
        } finally {
            OPENING.remove();
        }
    }

    /** For {@link ImClient#open}: the hooks of an opening inside {@link #open} on this thread, else none. */
    public static ClientFaults forOpening() {
        ClientFaults f = OPENING.get();
        return f == null ? ClientFaults.NONE : f;
    }
}
