package im.store.read;

import java.util.List;

/**
 * Who holds what in a conversation: its head and, for every device of every current member, the
 * delivered cursor ("this device has durably stored every visible event up to seq"). A message
 * with seq {@code s} is delivered to a device when {@code s <= delivered}.
 */
public record DeliveryState(String conv, long head, List<Device> devices) {
    public DeliveryState {
        devices = List.copyOf(devices);
    }

    /** One device of a current member and its cursor (0 when it never acked). */
    public record Device(String user, String device, long delivered) {}
}
