package im.launcher;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The module table of docs/architecture.md ("Modules: what runs where"), the one drawing of the
 * module graph: per module its package root and the modules of ours it depends on, in main code
 * and in its tests. {@link ModuleGraphTest} holds it against the poms, {@link LayeringTest}
 * against the imports.
 */
record ModuleTable(Map<String, Row> rows) {
    static final Path ROOT = Path.of("..");
    static final String HEADING = "### Modules: what runs where";
    static final String PACKAGE_COLUMN = "package";
    static final String MAIN_COLUMN = "depends on (ours)";
    static final String TEST_COLUMN = "its tests also use (ours)";

    record Row(String packageRoot, Set<String> main, Set<String> test) {
    }

    static ModuleTable read() {
        List<String> lines;
        try {
            lines = Files.readAllLines(ROOT.resolve("docs/architecture.md"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int at = lines.indexOf(HEADING);
        if (at < 0) throw new IllegalStateException("docs/architecture.md has no heading '" + HEADING + "'");
        while (at < lines.size() && !lines.get(at).startsWith("|")) at++;
        List<String> header = cells(lines.get(at));
        int pkg = header.indexOf(PACKAGE_COLUMN);
        int main = header.indexOf(MAIN_COLUMN);
        int test = header.indexOf(TEST_COLUMN);
        if (pkg < 0 || main < 0 || test < 0) {
            throw new IllegalStateException("the module table's header must have columns '" + PACKAGE_COLUMN + "', '"
                    + MAIN_COLUMN + "' and '" + TEST_COLUMN + "': " + header);
        }
        Map<String, Row> rows = new TreeMap<>();
        for (int i = at + 2; i < lines.size() && lines.get(i).startsWith("|"); i++) {
            List<String> row = cells(lines.get(i));
            Set<String> name = names(row.get(0));
            Set<String> root = names(row.get(pkg));
            if (name.size() != 1 || root.size() != 1) {
                throw new IllegalStateException("one module and one package per row of the module table: " + lines.get(i));
            }
            rows.put(name.iterator().next(), new Row(root.iterator().next(), names(row.get(main)), names(row.get(test))));
        }
        return new ModuleTable(rows);
    }

    /** {@code module} and every module its main arrows reach, following the arrows of those. */
    Set<String> reachableFrom(String module) {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(List.of(module));
        while (!todo.isEmpty()) {
            String m = todo.pop();
            if (!rows.containsKey(m)) throw new IllegalStateException("the module table draws an arrow to '" + m + "', which has no row");
            if (seen.add(m)) todo.addAll(rows.get(m).main());
        }
        return seen;
    }

    private static List<String> cells(String line) {
        List<String> cells = new ArrayList<>();
        for (String c : line.substring(1, line.lastIndexOf('|')).split("\\|")) cells.add(c.trim());
        return cells;
    }

    /** The backticked names of a cell ("nothing" has none). */
    private static Set<String> names(String cell) {
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("`([a-z.-]+)`").matcher(cell);
        while (m.find()) names.add(m.group(1));
        return names;
    }
}
