package im.topics;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * A record of {@code <prefix>cursors} (public, {@code v:1}, docs/topics.md): a committed change of
 * one device's delivered cursor in a conversation ({@link Update}), or the removal of its row when
 * the device reinstalled ({@link Deleted}).
 */
public sealed interface CursorRecord permits CursorRecord.Update, CursorRecord.Deleted {
    /** Schema version written as {@code "v"}. */
    int VERSION = 1;

    String conv();

    String device();

    /** The record value: the key fields, then those of the kind (the inverse of {@link #read}). */
    default String toJson() {
        ObjectNode n = RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv()).put("device", device());
        if (this instanceof Update u) {
            n.put("epoch", u.epoch()).put("delivered", u.delivered()).put("at", u.at());
        } else {
            n.put("deleted", true);
        }
        return n.toString();
    }

    /** An insert or update of the row: the device holds every visible event with seq ≤ {@code delivered}. */
    record Update(String conv, String device, int epoch, long delivered, long at) implements CursorRecord {
        public Update {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
        }
    }

    /** The row was deleted (the device moved to a new install epoch): it holds nothing any more. */
    record Deleted(String conv, String device) implements CursorRecord {
        public Deleted {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
        }
    }

    /** Reads a record value strictly; throws {@link MalformedRecordException} naming the field. */
    static CursorRecord read(String json) {
        Fields f = Fields.parse("cursor record", json).version(VERSION);
        String conv = f.id("conv");
        String device = f.id("device");
        if (f.has("deleted")) {
            if (!f.bool("deleted")) throw new MalformedRecordException("cursor record", "field 'deleted' is present but not true");
            return new Deleted(conv, device);
        }
        return new Update(conv, device, f.int32("epoch"), f.integral("delivered"), f.integral("at"));
    }
}
