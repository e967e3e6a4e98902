package im.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every command of {@code im} explains itself, and roles are told apart from client commands. */
class CommandTreeTest {
    private static void walk(CommandLine cl, List<CommandLine> all) {
        all.add(cl);
        // aliases map to the same CommandLine: visit each once
        cl.getSubcommands().values().stream().distinct().forEach(sub -> walk(sub, all));
    }

    private static String path(CommandLine cl) {
        return cl.getCommandSpec().qualifiedName(" ");
    }

    @Test
    void everyCommandHasADescriptionAndHelpThatExitsZero() {
        List<CommandLine> all = new ArrayList<>();
        walk(Im.commandLine(), all);
        assertTrue(all.size() > 20, "the tree was walked: " + all.size());
        for (CommandLine cl : all) {
            if (cl.getCommand() instanceof CommandLine.HelpCommand) continue;
            String name = path(cl);
            String[] description = cl.getCommandSpec().usageMessage().description();
            assertTrue(description.length > 0 && !description[0].isBlank(), name + " has a description");
            assertTrue(cl.getCommandSpec().optionsMap().containsKey("--help"), name + " has --help");

            List<String> args = new ArrayList<>(List.of(name.split(" ")).subList(1, name.split(" ").length));
            args.add("--help");
            CommandLine root = Im.commandLine();
            StringWriter out = new StringWriter();
            root.setOut(new PrintWriter(out));
            root.setErr(new PrintWriter(new StringWriter()));
            assertEquals(0, root.execute(args.toArray(String[]::new)), name + " --help");
            assertTrue(out.toString().startsWith("Usage: " + name), name + " --help prints its usage:\n" + out);
            assertTrue(out.toString().replaceAll("\\s+", " ").contains(description[0].replaceAll("\\s+", " ")),
                    name + " --help shows its description (lines wrapped):\n" + out);
        }
    }

    @Test
    void theRolesAreExactlyTheCommandsMarkedRole() {
        Set<String> roles = new TreeSet<>();
        Set<String> clients = new TreeSet<>();
        Im.commandLine().getSubcommands().forEach((name, cl) -> {
            if (!name.equals(cl.getCommandName()) || cl.getCommand() instanceof CommandLine.HelpCommand) return;
            (cl.getCommand() instanceof RoleCommand ? roles : clients).add(name);
        });
        assertEquals(Set.of("platform", "gateway", "relay", "delivery", "sweeper"), roles);
        assertEquals(Set.of("admin", "send", "edit", "recall", "receipts", "typing", "tail", "read", "unread", "lag", "events"), clients);
        assertFalse(clients.stream().anyMatch(roles::contains));
    }
}
