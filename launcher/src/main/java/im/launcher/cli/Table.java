package im.launcher.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** A plain text table: a header row and rows, columns padded to their widest cell. */
final class Table {
    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
        rows.add(header);
    }

    Table row(Object... cells) {
        String[] r = new String[cells.length];
        for (int i = 0; i < cells.length; i++) r[i] = cells[i] == null ? "-" : cells[i].toString();
        rows.add(r);
        return this;
    }

    boolean isEmpty() {
        return rows.size() == 1;
    }

    void print(PrintWriter out) {
        int cols = rows.get(0).length;
        int[] width = new int[cols];
        for (String[] r : rows) {
            for (int i = 0; i < cols; i++) width[i] = Math.max(width[i], r[i].length());
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < cols; i++) {
                line.append(r[i]);
                if (i < cols - 1) line.append(" ".repeat(width[i] - r[i].length() + 2));
            }
            out.println(line);
        }
        out.flush();
    }
}
