package im.gateway;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Counters of what the gateway holds for its connections (see {@link DeviceConnection}), read as meters. */
final class OutboundMeters {
    /** Pushes not written because a connection's queue (frames or bytes) was full. */
    final AtomicLong droppedPushes = new AtomicLong();
    /** Bytes of frames written to connections that their sockets have not taken yet, all connections together. */
    final LongAdder heldBytes = new LongAdder();
    /** Times a connection's reading was suspended because it reached its byte budget. */
    final AtomicLong suspensions = new AtomicLong();
    /** Connections whose reading is suspended now. */
    final AtomicInteger suspendedNow = new AtomicInteger();
    /** Connections closed because they stayed over their budget for IM_CONN_STALL_MS. */
    final AtomicLong stallCloses = new AtomicLong();
}
