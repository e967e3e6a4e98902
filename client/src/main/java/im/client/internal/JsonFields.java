package im.client.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;

/**
 * The strict JSON reading shared by the SDK's state files (outbox, event store): one mapper that
 * rejects duplicate keys and trailing tokens, the versioned root object every file starts with,
 * and field readers; anything bad is reported through the file's own "corrupt" error.
 */
final class JsonFields {
    /** Builds the file-specific error for bad content. */
    interface Corrupt {
        IOException at(String detail, Throwable cause);

        default IOException at(String detail) {
            return at(detail, null);
        }
    }

    /** Duplicate keys and trailing tokens are errors, as in the wire codec. */
    static final ObjectMapper MAPPER = JsonMapper.builder(
                    JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private JsonFields() {}

    /** Parses a state file's root: a JSON object whose {@code version} is {@code expectedVersion}. */
    static JsonNode versionedRoot(byte[] bytes, int expectedVersion, Corrupt corrupt) throws IOException {
        return versionedRoot(bytes, new int[] {expectedVersion}, corrupt);
    }

    /** Parses a state file's root: a JSON object whose {@code version} is one of {@code readable}. */
    static JsonNode versionedRoot(byte[] bytes, int[] readable, Corrupt corrupt) throws IOException {
        JsonNode root;
        try {
            root = MAPPER.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw corrupt.at("not valid JSON (truncated or damaged): " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw corrupt.at("expected a JSON object");
        }
        JsonNode version = root.get("version");
        if (version == null || !version.isInt() || java.util.Arrays.stream(readable).noneMatch(v -> v == version.intValue())) {
            throw corrupt.at("unsupported or missing version (expected "
                    + (readable.length == 1 ? String.valueOf(readable[0]) : "one of " + java.util.Arrays.toString(readable)) + ")");
        }
        return root;
    }

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
