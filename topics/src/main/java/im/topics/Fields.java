package im.topics;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * Strict access to the fields of one topic record: every getter throws a
 * {@link MalformedRecordException} that names the record and the field when the field is missing
 * or of the wrong type, so nothing is ever read as 0 or "". Unknown fields are ignored.
 */
final class Fields {
    private final String record;
    private final JsonNode node;

    private Fields(String record, JsonNode node) {
        if (node == null || !node.isObject()) throw new MalformedRecordException(record, "not a JSON object");
        this.record = record;
        this.node = node;
    }

    static Fields parse(String record, String json) {
        if (json == null) throw new MalformedRecordException(record, "no value");
        try {
            return new Fields(record, RouteJson.JSON.readTree(json));
        } catch (JsonProcessingException e) {
            throw new MalformedRecordException(record, "not JSON: " + e.getOriginalMessage());
        }
    }

    static Fields of(String record, JsonNode node) {
        return new Fields(record, node);
    }

    /** {@code v} must be {@code expected}: a version this reader does not know is never guessed at. */
    Fields version(int expected) {
        long v = integral("v");
        if (v != expected) throw new MalformedRecordException(record, "field 'v' has unknown version " + v + ", expected " + expected);
        return this;
    }

    boolean has(String f) {
        return node.has(f);
    }

    /** Present and not JSON null (an optional field). */
    boolean present(String f) {
        JsonNode v = node.get(f);
        return v != null && !v.isNull();
    }

    /** A non-empty string. */
    String id(String f) {
        String s = text(f);
        if (s.isEmpty()) throw new MalformedRecordException(record, "field '" + f + "' is empty");
        return s;
    }

    /** A string, possibly empty. */
    String text(String f) {
        JsonNode v = require(f);
        if (!v.isTextual()) throw wrongType(f, "a string", v);
        return v.textValue();
    }

    /** A field that must be present and holds a string or JSON null. */
    String nullableText(String f) {
        JsonNode v = require(f);
        if (v.isNull()) return null;
        if (!v.isTextual()) throw wrongType(f, "a string or null", v);
        return v.textValue();
    }

    long integral(String f) {
        JsonNode v = require(f);
        if (!v.isIntegralNumber() || !v.canConvertToLong()) throw wrongType(f, "an integer", v);
        return v.longValue();
    }

    int int32(String f) {
        JsonNode v = require(f);
        if (!v.isIntegralNumber() || !v.canConvertToInt()) throw wrongType(f, "a 32-bit integer", v);
        return v.intValue();
    }

    boolean bool(String f) {
        JsonNode v = require(f);
        if (!v.isBoolean()) throw wrongType(f, "a boolean", v);
        return v.booleanValue();
    }

    /** One of {@code allowed}. */
    String oneOf(String f, java.util.Set<String> allowed) {
        String s = text(f);
        if (!allowed.contains(s)) throw new MalformedRecordException(record, "field '" + f + "' has unknown value '" + s + "'");
        return s;
    }

    JsonNode object(String f) {
        JsonNode v = require(f);
        if (!v.isObject()) throw wrongType(f, "an object", v);
        return v;
    }

    /** A non-empty array of non-empty strings. */
    java.util.List<String> ids(String f) {
        JsonNode v = require(f);
        if (!v.isArray() || v.isEmpty()) throw wrongType(f, "a non-empty array of strings", v);
        java.util.List<String> out = new java.util.ArrayList<>(v.size());
        for (JsonNode e : v) {
            if (!e.isTextual() || e.textValue().isEmpty()) throw wrongType(f, "a non-empty array of strings", v);
            out.add(e.textValue());
        }
        return java.util.List.copyOf(out);
    }

    /** An object whose values are all integers (absent: empty). */
    java.util.Map<String, Long> optionalLongs(String f) {
        if (!node.has(f)) return java.util.Map.of();
        JsonNode v = object(f);
        java.util.Map<String, Long> out = new java.util.TreeMap<>();
        for (var it = v.fields(); it.hasNext(); ) {
            var e = it.next();
            if (!e.getValue().isIntegralNumber() || !e.getValue().canConvertToLong()) {
                throw wrongType(f + "." + e.getKey(), "an integer", e.getValue());
            }
            out.put(e.getKey(), e.getValue().longValue());
        }
        return java.util.Collections.unmodifiableMap(out);
    }

    private JsonNode require(String f) {
        JsonNode v = node.get(f);
        if (v == null) throw new MalformedRecordException(record, "missing field '" + f + "'");
        return v;
    }

    private MalformedRecordException wrongType(String f, String expected, JsonNode got) {
        return new MalformedRecordException(record, "field '" + f + "' must be " + expected + ", got " + got.getNodeType());
    }
}
