package im.client.internal;

import java.util.List;

/**
 * Test-only fault points of the receive path ("receiving device crash before save / after save
 * before ack"). Both run on the client's receive thread. If a hook <b>throws</b> (any
 * RuntimeException), the client simulates a process death at exactly that point: it aborts the
 * socket (no close handshake, no ack, no further store write, no reconnect) and closes itself.
 * The durable state in {@code stateDir} is then exactly what a killed process would leave; a test
 * reopens a new {@link im.client.ImClient} on the same directory, like a restarted process.
 * Hooks that return normally have no effect. Production clients run {@link #NONE}; the SDK's tests
 * install others through a package-private {@code ImClient.open} (their door, {@code FaultInjection},
 * is in the SDK's test sources, not in its jar).
 */
public interface ClientFaults {
    ClientFaults NONE = new ClientFaults() {
    };

    /** Before the events {@code seqs} of {@code conv} (one push batch or one sync page) are written. */
    default void beforeStore(String conv, List<Long> seqs) {
    }

    /** After a batch for {@code conv} is durable (cursor now {@code cursor}) and before any ack covering it is sent. */
    default void afterStoreBeforeAck(String conv, long cursor) {
    }
}
