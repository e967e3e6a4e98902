package im.system;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * docs/asyncapi.yaml as JSON Schemas: one schema per message of {@code components.messages}, each
 * resolved against the whole document so that its {@code $ref}s to {@code components.schemas} work.
 * Validation is done by networknt's json-schema-validator (draft 7, AsyncAPI 3's schema format).
 */
final class Contract {
    static final Path FILE = Path.of("..", "docs", "asyncapi.yaml");
    private static final ObjectMapper JSON = new ObjectMapper();

    final JsonNode doc;
    private final Map<String, Schema> schemas = new HashMap<>();

    private Contract(JsonNode doc) {
        this.doc = doc;
        SchemaRegistry registry = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_7);
        doc.path("components").path("messages").fieldNames().forEachRemaining(name -> {
            // Root = the whole document (so "#/components/..." resolves), entered through $ref.
            ObjectNode root = ((ObjectNode) doc.deepCopy()).put("$ref", "#/components/messages/" + name + "/payload");
            root.put("$schema", SpecificationVersion.DRAFT_7.getDialectId());
            schemas.put(name, registry.getSchema(root));
        });
    }

    static Contract load() {
        try (Reader r = Files.newBufferedReader(FILE)) {
            Object tree = new Yaml(new LoaderOptions()).load(r);
            return new Contract(JSON.valueToTree(tree));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + FILE.toAbsolutePath(), e);
        }
    }

    Set<String> messages() {
        return schemas.keySet();
    }

    /** The schema violations of {@code value} as message {@code name}; empty when it conforms. */
    List<String> violations(String name, JsonNode value) {
        Schema s = schemas.get(name);
        if (s == null) return List.of("no message '" + name + "' in " + FILE);
        return s.validate(value).stream().map(Error::toString).toList();
    }

    List<String> violations(String name, String json) {
        try {
            return violations(name, JSON.readTree(json));
        } catch (IOException e) {
            return List.of("not JSON: " + e.getMessage());
        }
    }

    /** The message a topic record value is, by its shape: an event, a cursor update or deletion. */
    static String cursorMessage(JsonNode value) {
        return value.has("user") ? "readCursor" : value.has("deleted") ? "cursorDeleted" : "cursorUpdate";
    }
}
