package im.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;

/** Strict field readers for the SDK's state files; a bad field is reported through the file's own "corrupt" error. */
final class JsonFields {
    /** Builds the file-specific error for a bad field. */
    interface Corrupt {
        IOException at(String detail);
    }

    private JsonFields() {}

    static String text(JsonNode n, String where, String field, boolean required, Corrupt corrupt) throws IOException {
        JsonNode v = n.get(field);
        if (v == null && !required) return null;
        if (v == null || !v.isTextual()) throw corrupt.at(where + "." + field + ": expected a string");
        return v.textValue();
    }

    static long number(JsonNode n, String where, String field, Corrupt corrupt) throws IOException {
        JsonNode v = n.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw corrupt.at(where + "." + field + ": expected an integer");
        }
        return v.longValue();
    }
}
