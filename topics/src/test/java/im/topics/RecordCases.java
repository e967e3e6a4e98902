package im.topics;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Consumer;
import java.util.function.Function;

/** Shared checks of the reader tests: a broken copy of a valid record is refused with the field's name. */
final class RecordCases {
    private RecordCases() {}

    static ObjectNode tree(String json) {
        return (ObjectNode) RouteJson.parse(json);
    }

    /** The reader refuses {@code valid} changed by {@code breakIt}, naming {@code field}. */
    static void refused(String valid, Consumer<ObjectNode> breakIt, String field, Function<String, ?> reader) {
        ObjectNode o = tree(valid);
        breakIt.accept(o);
        MalformedRecordException e = assertThrows(MalformedRecordException.class, () -> reader.apply(o.toString()));
        assertTrue(e.getMessage().contains("'" + field + "'"), () -> "message names " + field + ": " + e.getMessage());
    }

    static void missing(String valid, String field, Function<String, ?> reader) {
        refused(valid, o -> o.remove(field), field, reader);
    }

    /** Replaces the field with a value of another JSON type (a number for a string, a string otherwise). */
    static void mistyped(String valid, String field, Function<String, ?> reader) {
        refused(valid, o -> {
            if (o.get(field).isTextual()) o.put(field, 7);
            else o.put(field, "7");
        }, field, reader);
    }
}
