package im.launcher;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The module table of docs/architecture.md ("Modules: what runs where") as rules over the main
 * classes of every module on this test class path: each module's package root may use only the
 * modules the table draws arrows to (directly or through theirs), {@code protocol} nothing of ours,
 * no package cycles, no main class of the test kit. The launcher sees every module but
 * {@code reliability}, {@code bench} and {@code examples} (nothing depends on them; the table lets
 * them use anything), so those three are not checked here.
 */
@AnalyzeClasses(packages = "im", importOptions = ImportOption.DoNotIncludeTests.class)
class LayeringTest {
    private record Module(String root, List<String> uses) {
    }

    /** Module -> its package root and the modules of ours it uses: the table's "depends on (ours)" column. */
    private static final Map<String, Module> TABLE = new LinkedHashMap<>();

    static {
        TABLE.put("protocol", new Module("im.protocol", List.of()));
        TABLE.put("topics", new Module("im.topics", List.of("protocol")));
        TABLE.put("infra", new Module("im.infra", List.of("protocol")));
        TABLE.put("ingest", new Module("im.ingest", List.of("infra")));
        TABLE.put("cursor-service", new Module("im.cursor", List.of("infra", "topics")));
        TABLE.put("read-path", new Module("im.read", List.of("infra", "protocol")));
        TABLE.put("relay", new Module("im.relay", List.of("infra", "topics")));
        TABLE.put("routing", new Module("im.routing", List.of("infra", "topics")));
        TABLE.put("delivery", new Module("im.delivery", List.of("routing")));
        TABLE.put("sweeper", new Module("im.sweeper", List.of("routing")));
        TABLE.put("gateway", new Module("im.gateway", List.of("protocol", "topics", "ingest", "cursor-service", "read-path")));
        TABLE.put("client", new Module("im.client", List.of("protocol")));
        TABLE.put("embedded", new Module("im.embedded", List.of("infra")));
        TABLE.put("testkit", new Module("im.testkit", List.of("embedded")));
        // "all roles, embedded"; the admin CLI's tail and send are SDK clients, hence client.
        TABLE.put("launcher", new Module("im.launcher", List.of("gateway", "relay", "delivery", "sweeper", "client", "embedded")));
    }

    @ArchTest
    static final ArchRule everyClassOfOursBelongsToAModuleOfTheTable = classes().that().resideInAPackage("im..")
            .should().resideInAnyPackage(TABLE.values().stream().map(m -> m.root() + "..").toArray(String[]::new))
            .because("a new module gets its row in the table (and here) before its code");

    @ArchTest
    static final ArchRule eachModuleUsesOnlyWhatTheTableDraws = CompositeArchRule.of(
            TABLE.keySet().stream().map(LayeringTest::usesOnlyWhatTheTableDraws).toList());

    @ArchTest
    static final ArchRule protocolDependsOnNothingOfOurs = noClasses().that().resideInAPackage("im.protocol..")
            .should().dependOnClassesThat(resideInAPackage("im..").and(not(resideInAPackage("im.protocol.."))))
            .because("the wire frames are shared by the server and the SDKs");

    @ArchTest
    static final ArchRule noPackageCycles = slices().matching("im.(**)").should().beFreeOfCycles()
            // The SDK's internals use its API types (options, exceptions, values) while ImClient and
            // ClientRuntime are built on ClientCore and ClientThreads: a known cycle, the one exception.
            .ignoreDependency(resideInAPackage("im.client.internal"), resideInAPackage("im.client"));

    @ArchTest
    static final ArchRule noMainClassUsesTheTestKit = noClasses().that().resideOutsideOfPackage("im.testkit..")
            .should().dependOnClassesThat().resideInAPackage("im.testkit..")
            .because("the test kit is a test-scope dependency only");

    private static ArchRule usesOnlyWhatTheTableDraws(String module) {
        String[] allowed = reachableFrom(module).stream().map(m -> TABLE.get(m).root() + "..").toArray(String[]::new);
        return noClasses().that().resideInAPackage(TABLE.get(module).root() + "..")
                .should().dependOnClassesThat(resideInAPackage("im..").and(not(resideInAnyPackage(allowed))))
                .as("module " + module + " uses only " + String.join(", ", reachableFrom(module)));
    }

    /** {@code module} and every module its arrows reach, following the arrows of those. */
    private static Set<String> reachableFrom(String module) {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(List.of(module));
        while (!todo.isEmpty()) {
            String m = todo.pop();
            if (seen.add(m)) {
                todo.addAll(TABLE.get(m).uses());
            }
        }
        return seen;
    }
}
