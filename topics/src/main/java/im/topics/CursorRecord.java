package im.topics;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * A record of {@code <prefix>cursors} (public, {@code v:1}, docs/topics.md): one device's delivered
 * cursor in a conversation moved ({@link Update}, published by the cursor service), the device
 * reinstalled and its cursors of older installs are gone ({@link Deleted}, published by the CDC
 * relay), or a user's read cursor in a conversation moved ({@link Read}, published by the gateway
 * that took the read).
 */
public sealed interface CursorRecord permits CursorRecord.Update, CursorRecord.Deleted, CursorRecord.Read {
    /** Schema version written as {@code "v"}. */
    int VERSION = 1;

    String conv();

    /** The record value: the key fields, then those of the kind (the inverse of {@link #read}). */
    default String toJson() {
        ObjectNode n = RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv());
        if (this instanceof Read r) {
            return n.put("user", r.user()).put("read", r.read()).put("at", r.at()).toString();
        }
        if (this instanceof Update u) {
            return n.put("device", u.device()).put("epoch", u.epoch()).put("delivered", u.delivered()).put("at", u.at()).toString();
        }
        Deleted d = (Deleted) this;
        n.put("device", d.device()).put("deleted", true);
        if (d.epoch() != Deleted.ANY_EPOCH) n.put("epoch", d.epoch());
        return n.toString();
    }

    /** An insert or update of the row: the device holds every visible event with seq ≤ {@code delivered}. */
    record Update(String conv, String device, int epoch, long delivered, long at) implements CursorRecord {
        public Update {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
        }
    }

    /**
     * The device reinstalled: it moved to install {@code epoch}, and every cursor of an older install
     * is gone (it holds nothing of what they stored). It says nothing about cursors of {@code epoch}
     * or later: the new install's first cursor may come before this record (they are published by
     * different processes). {@link #ANY_EPOCH} (no {@code epoch} field) is a record written before
     * the field existed; it removes the cursor whatever its epoch.
     */
    record Deleted(String conv, String device, int epoch) implements CursorRecord {
        /** The epoch of a deletion record written without one: every cursor of the pair is gone. */
        public static final int ANY_EPOCH = 0;

        public Deleted {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
            if (epoch < 0) throw new IllegalArgumentException("epoch must not be negative, got " + epoch);
        }

        /** True if a cursor written by install {@code cursorEpoch} is gone after this record. */
        public boolean removes(int cursorEpoch) {
            return epoch == ANY_EPOCH || cursorEpoch < epoch;
        }
    }

    /**
     * The user's read cursor in {@code conv} moved to {@code read}: the user has read every event
     * with seq &le; {@code read} ({@code at}: when, epoch ms). It only grows and never passes the
     * head the user may see; it has no device (it is the user's, on all its devices).
     */
    record Read(String conv, String user, long read, long at) implements CursorRecord {
        public Read {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(user, "user");
            if (read < 0) throw new IllegalArgumentException("read must not be negative, got " + read);
        }
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    static CursorRecord read(String json) {
        Fields f = Fields.parse("cursor record", json).version(VERSION);
        String conv = f.id("conv");
        if (f.has("user")) {
            long read = f.integral("read");
            if (read < 0) throw new MalformedRecordException("cursor record", "field 'read' must not be negative, got " + read);
            return new Read(conv, f.id("user"), read, f.integral("at"));
        }
        String device = f.id("device");
        if (f.has("deleted")) {
            if (!f.bool("deleted")) throw new MalformedRecordException("cursor record", "field 'deleted' is present but not true");
            int epoch = f.has("epoch") ? f.int32("epoch") : Deleted.ANY_EPOCH;
            if (f.has("epoch") && epoch < 1) throw new MalformedRecordException("cursor record", "field 'epoch' must be at least 1, got " + epoch);
            return new Deleted(conv, device, epoch);
        }
        return new Update(conv, device, f.int32("epoch"), f.integral("delivered"), f.integral("at"));
    }
}
