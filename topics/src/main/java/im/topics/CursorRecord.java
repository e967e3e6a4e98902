package im.topics;

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

    String toJson();

    /** An insert or update of the row: the device holds every visible event with seq ≤ {@code delivered}. */
    record Update(String conv, String device, int epoch, long delivered, long at) implements CursorRecord {
        public Update {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
        }

        @Override
        public String toJson() {
            return RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("device", device)
                    .put("epoch", epoch).put("delivered", delivered).put("at", at).toString();
        }
    }

    /** The row was deleted (the device moved to a new install epoch): it holds nothing any more. */
    record Deleted(String conv, String device) implements CursorRecord {
        public Deleted {
            Objects.requireNonNull(conv, "conv");
            Objects.requireNonNull(device, "device");
        }

        @Override
        public String toJson() {
            return RouteJson.JSON.createObjectNode().put("v", VERSION).put("conv", conv).put("device", device)
                    .put("deleted", true).toString();
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
