package im.infra.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The module table in docs/architecture.md is the one drawing of the module graph; this test reads it
 * and every module's pom.xml, so the drawing cannot drift from what Maven builds.
 */
class ModuleGraphTest {
    private static final Path ROOT = Path.of("..");
    private static final String HEADING = "### Modules: what runs where";
    private static final String MAIN_COLUMN = "depends on (ours)";
    private static final String TEST_COLUMN = "its tests also use (ours)";

    @Test
    void theArchitectureTableListsEveryModuleWithThePomsDependencies() throws Exception {
        Element root = pom(ROOT.resolve("pom.xml"));
        String group = text(root, "groupId");
        Set<String> modules = new TreeSet<>();
        for (Element m : children(child(root, "modules"), "module")) {
            modules.add(m.getTextContent().trim());
        }
        Map<String, Deps> table = readTable();

        assertEquals(modules, table.keySet(),
                "docs/architecture.md's module table must have one row per <module> of pom.xml");
        List<String> differences = new ArrayList<>();
        for (String module : modules) {
            Deps poms = declared(module, group);
            Deps doc = table.get(module);
            if (!poms.main().equals(doc.main())) {
                differences.add(module + ": pom.xml declares " + poms.main() + " but the '" + MAIN_COLUMN
                        + "' column says " + doc.main());
            }
            if (!poms.test().equals(doc.test())) {
                differences.add(module + ": pom.xml declares " + poms.test() + " in test scope but the '"
                        + TEST_COLUMN + "' column says " + doc.test());
            }
        }
        assertTrue(differences.isEmpty(),
                "docs/architecture.md's module table differs from the poms:\n  " + String.join("\n  ", differences));
    }

    record Deps(Set<String> main, Set<String> test) {}

    /** Our modules among a pom's own dependencies (not dependencyManagement, not plugins), split by scope. */
    private static Deps declared(String module, String group) throws Exception {
        Deps deps = new Deps(new TreeSet<>(), new TreeSet<>());
        Element project = pom(ROOT.resolve(module).resolve("pom.xml"));
        Element dependencies = child(project, "dependencies");
        if (dependencies == null) {
            return deps;
        }
        for (Element d : children(dependencies, "dependency")) {
            if (!group.equals(text(d, "groupId"))) {
                continue;
            }
            ("test".equals(text(d, "scope")) ? deps.test() : deps.main()).add(text(d, "artifactId"));
        }
        return deps;
    }

    private static Map<String, Deps> readTable() throws Exception {
        List<String> lines = Files.readAllLines(ROOT.resolve("docs/architecture.md"));
        int at = lines.indexOf(HEADING);
        assertTrue(at >= 0, "docs/architecture.md has no heading '" + HEADING + "'");
        while (at < lines.size() && !lines.get(at).startsWith("|")) {
            at++;
        }
        List<String> header = cells(lines.get(at));
        int main = header.indexOf(MAIN_COLUMN);
        int test = header.indexOf(TEST_COLUMN);
        assertTrue(main > 0 && test > 0,
                "the module table's header must have columns '" + MAIN_COLUMN + "' and '" + TEST_COLUMN + "': " + header);
        Map<String, Deps> rows = new TreeMap<>();
        for (int i = at + 2; i < lines.size() && lines.get(i).startsWith("|"); i++) {
            List<String> row = cells(lines.get(i));
            Set<String> names = names(row.get(0));
            assertEquals(1, names.size(), "one module per row of the module table: " + lines.get(i));
            rows.put(names.iterator().next(), new Deps(names(row.get(main)), names(row.get(test))));
        }
        return rows;
    }

    private static List<String> cells(String line) {
        List<String> cells = new ArrayList<>();
        for (String c : line.substring(1, line.lastIndexOf('|')).split("\\|")) {
            cells.add(c.trim());
        }
        return cells;
    }

    /** The backticked names of a cell; "nothing" has none. */
    private static Set<String> names(String cell) {
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("`([a-z-]+)`").matcher(cell);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private static Element pom(Path file) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile()).getDocumentElement();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> found = new ArrayList<>();
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                found.add(e);
            }
        }
        return found;
    }

    private static Element child(Element parent, String name) {
        List<Element> found = children(parent, name);
        return found.isEmpty() ? null : found.get(0);
    }

    private static String text(Element parent, String name) {
        Element e = child(parent, name);
        return e == null ? null : e.getTextContent().trim();
    }
}
