package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The module table in docs/architecture.md is the one drawing of the module graph; this test reads it
 * and every module's pom.xml, so the drawing cannot drift from what Maven builds.
 */
class ModuleGraphTest {
    private static final Path ROOT = ModuleTable.ROOT;

    @Test
    void theArchitectureTableListsEveryModuleWithThePomsDependencies() throws Exception {
        Element root = pom(ROOT.resolve("pom.xml"));
        String group = text(root, "groupId");
        Set<String> modules = new TreeSet<>();
        for (Element m : children(child(root, "modules"), "module")) {
            modules.add(m.getTextContent().trim());
        }
        Map<String, ModuleTable.Row> table = ModuleTable.read().rows();

        assertEquals(modules, table.keySet(),
                "docs/architecture.md's module table must have one row per <module> of pom.xml");
        List<String> differences = new ArrayList<>();
        for (String module : modules) {
            Deps poms = declared(module, group);
            ModuleTable.Row doc = table.get(module);
            if (!poms.main().equals(doc.main())) {
                differences.add(module + ": pom.xml declares " + poms.main() + " but the '" + ModuleTable.MAIN_COLUMN
                        + "' column says " + doc.main());
            }
            if (!poms.test().equals(doc.test())) {
                differences.add(module + ": pom.xml declares " + poms.test() + " in test scope but the '"
                        + ModuleTable.TEST_COLUMN + "' column says " + doc.test());
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
